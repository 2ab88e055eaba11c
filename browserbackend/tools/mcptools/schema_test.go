package mcptools_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

func TestClientListsEveryToolWithValidSchemas(t *testing.T) {
	tl, _ := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)

	res, err := cs.ListTools(testCtx(t), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)

		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var in jsonschema.Schema
		require.NoError(t, json.Unmarshal(raw, &in), tool.Name)
		_, err = in.Resolve(nil)
		require.NoError(t, err, "%s: the input schema resolves", tool.Name)
		assert.Equal(t, "object", in.Type, tool.Name)
		for _, p := range []string{"browser_mode", "timeout_ms", "conversation_id"} {
			require.Contains(t, in.Properties, p, tool.Name)
		}
		assert.Contains(t, in.Properties["browser_mode"].Description, "cdp-inspect (alias cdp-debugger)", tool.Name)
		for name, p := range in.Properties {
			assert.NotEmpty(t, p.Description, "%s.%s has a description a model can act on", tool.Name, name)
		}
		assert.NotContains(t, in.Required, "browser_mode", tool.Name)

		raw, err = json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		var out jsonschema.Schema
		require.NoError(t, json.Unmarshal(raw, &out), tool.Name)
		_, err = out.Resolve(nil)
		require.NoError(t, err, "%s: the output schema resolves", tool.Name)
		assert.Equal(t, "object", out.Type, tool.Name)
	}
	assert.ElementsMatch(t, mcptools.ToolNames, names)

	byName := func(n string) *jsonschema.Schema {
		i := slices.Index(names, n)
		raw, _ := json.Marshal(res.Tools[i].InputSchema)
		var s jsonschema.Schema
		require.NoError(t, json.Unmarshal(raw, &s))
		return &s
	}
	assert.Equal(t, []string{"url"}, byName("browser_navigate").Required)
	assert.ElementsMatch(t, []string{"text"}, byName("browser_type").Required)
	assert.ElementsMatch(t, []string{"values"}, byName("browser_select_option").Required)
	assert.ElementsMatch(t, []string{"key"}, byName("browser_press_key").Required)
	assert.ElementsMatch(t, []string{"credential", "fields"}, byName("browser_login").Required)
}

// jsonNames returns the JSON property names of a struct type, embedded
// structs flattened.
func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.Anonymous {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// The argument types are the tools' inputs plus conversation_id: a field
// the tools package adds or renames fails here, not silently at a client.
func TestArgumentTypesMirrorTheToolInputs(t *testing.T) {
	pairs := []struct{ args, in any }{
		{mcptools.NavigateArgs{}, tools.NavigateInput{}},
		{mcptools.SnapshotArgs{}, tools.SnapshotInput{}},
		{mcptools.ScreenshotArgs{}, tools.ScreenshotInput{}},
		{mcptools.ElementArgs{}, tools.ElementInput{}},
		{mcptools.TypeArgs{}, tools.TypeInput{}},
		{mcptools.PressKeyArgs{}, tools.PressKeyInput{}},
		{mcptools.ScrollArgs{}, tools.ScrollInput{}},
		{mcptools.SelectOptionArgs{}, tools.SelectOptionInput{}},
		{mcptools.WaitForArgs{}, tools.WaitForInput{}},
		{mcptools.ExtractArgs{}, tools.ExtractInput{}},
		{mcptools.LinksArgs{}, tools.LinksInput{}},
		{mcptools.AttachArgs{}, tools.AttachInput{}},
		{mcptools.ReleaseArgs{}, tools.ReleaseInput{}},
		{mcptools.StatusArgs{}, tools.StatusInput{}},
		{mcptools.LoginArgs{}, tools.LoginInput{}},
	}
	for _, p := range pairs {
		got := jsonNames(reflect.TypeOf(p.args))
		want := append(jsonNames(reflect.TypeOf(p.in)), "conversation_id")
		assert.ElementsMatch(t, want, got, reflect.TypeOf(p.args).Name())
	}
}

// The limits the descriptions state are the tools package's.
func TestDescriptionsStateTheToolsLimits(t *testing.T) {
	desc := func(v any, field string) string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		require.True(t, ok, field)
		return f.Tag.Get("jsonschema")
	}
	itoa := strconv.Itoa
	ms := func(d interface{ Milliseconds() int64 }) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	assert.Contains(t, desc(mcptools.SnapshotArgs{}, "MaxNodes"), itoa(tools.MaxSnapshotNodes))
	assert.Contains(t, desc(mcptools.SnapshotArgs{}, "MaxNodes"), itoa(tools.DefaultSnapshotMaxNodes))
	assert.Contains(t, desc(mcptools.ExtractArgs{}, "MaxChars"), itoa(tools.MaxExtractChars))
	assert.Contains(t, desc(mcptools.ExtractArgs{}, "MaxChars"), itoa(tools.DefaultExtractMaxChars))
	assert.Contains(t, desc(mcptools.LinksArgs{}, "Limit"), itoa(tools.MaxLinksLimit))
	assert.Contains(t, desc(mcptools.LinksArgs{}, "Limit"), itoa(tools.DefaultLinksLimit))
	timeout := desc(mcptools.Common{}, "TimeoutMs")
	for _, d := range []interface{ Milliseconds() int64 }{tools.MaxTimeout, tools.DefaultNavigateTimeout, tools.DefaultWaitTimeout, tools.DefaultActionTimeout} {
		assert.Contains(t, timeout, ms(d))
	}
}
