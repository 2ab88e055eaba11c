package sessions

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// ContextsPath is where ContextsHandler serves:
//
//	GET    /v1/browser/contexts               the owner's saved logins (no content)
//	POST   /v1/browser/contexts/{name}/grants {"agent_id": …} or {"role": …}: grant
//	DELETE /v1/browser/contexts/{name}/grants the same body: revoke
const ContextsPath = "/v1/browser/contexts"

// ContextsHandler serves the saved logins of the owner that owner returns
// for a request (the host's signed-in user; "" is refused 401) and their
// grants, for a host's dashboard. It never returns cookies or storage.
// Errors are JSON {"code", "param", "message"}: validation_failed 400,
// forbidden 403 (an unknown name too), provider_error 500.
func ContextsHandler(st *Store, owner func(*http.Request) string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ContextsPath, func(w http.ResponseWriter, r *http.Request) {
		who := owner(r)
		if who == "" {
			http.Error(w, "sessions: sign in first", http.StatusUnauthorized)
			return
		}
		list, err := st.Contexts(r.Context(), who)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"contexts": list})
	})
	grant := func(revoke bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			who := owner(r)
			if who == "" {
				http.Error(w, "sessions: sign in first", http.StatusUnauthorized)
				return
			}
			var g Grant
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&g); err != nil {
				writeErr(w, &guard.Error{Code: guard.CodeValidationFailed, Param: "grant", Message: "sessions: the body is not a grant"})
				return
			}
			name := r.PathValue("name")
			var err error
			if revoke {
				err = st.RevokeContext(r.Context(), who, name, g)
			} else {
				err = st.GrantContext(r.Context(), who, name, g)
			}
			if err != nil {
				writeErr(w, err)
				return
			}
			c, err := st.Context(r.Context(), who, name)
			if err != nil {
				writeErr(w, err)
				return
			}
			writeJSON(w, http.StatusOK, c)
		}
	}
	mux.HandleFunc("POST "+ContextsPath+"/{name}/grants", grant(false))
	mux.HandleFunc("DELETE "+ContextsPath+"/{name}/grants", grant(true))
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// StatusOf is the HTTP status of a guard error code: validation_failed
// 400, forbidden 403, context_locked 409, feature_not_configured 501,
// anything else 500.
func StatusOf(code string) int {
	switch code {
	case guard.CodeValidationFailed:
		return http.StatusBadRequest
	case guard.CodeForbidden:
		return http.StatusForbidden
	case guard.CodeContextLocked:
		return http.StatusConflict
	case guard.CodeFeatureNotConfigured:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

func writeErr(w http.ResponseWriter, err error) {
	var ge *guard.Error
	if !errors.As(err, &ge) {
		ge = &guard.Error{Code: guard.CodeProviderError, Message: "sessions: the store failed"}
	}
	writeJSON(w, StatusOf(ge.Code), map[string]string{"code": ge.Code, "param": ge.Param, "message": ge.Message})
}
