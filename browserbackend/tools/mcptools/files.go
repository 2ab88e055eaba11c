package mcptools

import (
	"context"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxSessionFiles bounds the files one session lists and reads; past it the
// oldest is forgotten (the file itself stays on disk).
const maxSessionFiles = 256

// producedFile is a file a tool call wrote for its session, or a page it
// linked (render), served as an MCP resource.
type producedFile struct {
	res  *mcp.Resource
	path string
	// render, when set, makes the resource's contents at each read
	// instead of reading path.
	render func() (*mcp.ReadResourceResult, error)
}

// sessionFiles are the files of one session, by URI, oldest first.
type sessionFiles struct {
	byURI map[string]producedFile
	order []string
}

// addFile makes the file at path a resource of st's session: listed by
// resources/list and read by resources/read in that session only, until the
// session ends. uri is prefix plus the file's base name. It returns the link
// a result carries.
func (s *Server) addFile(st *session, prefix, path, mimeType, title string, size int64) *mcp.ResourceLink {
	name := filepath.Base(path)
	res := &mcp.Resource{URI: prefix + name, Name: name, Title: title, MIMEType: mimeType, Size: size}
	s.addResource(st, producedFile{res: res, path: path})
	sz := size
	return &mcp.ResourceLink{URI: res.URI, Name: name, Title: title, MIMEType: mimeType, Size: &sz}
}

// addResource makes f a resource of st's session, as addFile does.
func (s *Server) addResource(st *session, f producedFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := &st.files
	if fs.byURI == nil {
		fs.byURI = map[string]producedFile{}
	}
	if _, ok := fs.byURI[f.res.URI]; !ok {
		fs.order = append(fs.order, f.res.URI)
	}
	fs.byURI[f.res.URI] = f
	for len(fs.order) > maxSessionFiles {
		delete(fs.byURI, fs.order[0])
		fs.order = fs.order[1:]
	}
}

// file returns the file uri names in ss's session.
func (s *Server) file(ss *mcp.ServerSession, uri string) (producedFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessions[ss]
	if st == nil {
		return producedFile{}, false
	}
	f, ok := st.files.byURI[uri]
	return f, ok
}

// files returns the resources of ss's session, oldest first.
func (s *Server) files(ss *mcp.ServerSession) []*mcp.Resource {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*mcp.Resource{} // never null on the wire
	if st := s.sessions[ss]; st != nil {
		for _, uri := range st.files.order {
			out = append(out, st.files.byURI[uri].res)
		}
	}
	return out
}

// resourcesMiddleware answers resources/list with the caller's session's
// files, and resources/read of one of them; every other request, and a read
// of any other URI, goes on to next.
func (s *Server) resourcesMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListResourcesRequest:
			// One page: a session holds at most maxSessionFiles.
			return &mcp.ListResourcesResult{Resources: s.files(r.Session)}, nil
		case *mcp.ReadResourceRequest:
			if r.Params != nil {
				if f, ok := s.file(r.Session, r.Params.URI); ok {
					return readFile(f)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// readFile reads a produced file (or renders it); a file gone from disk is
// not found.
func readFile(f producedFile) (*mcp.ReadResourceResult, error) {
	if f.render != nil {
		return f.render()
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(f.res.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: f.res.URI, MIMEType: f.res.MIMEType, Blob: data}}}, nil
}

// notProduced answers resources/read of a URI that matches a template but
// that no tool call of the session produced (produced files are served by
// resourcesMiddleware before the templates are looked at).
func notProduced(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, mcp.ResourceNotFoundError(req.Params.URI)
}
