package mcptools_test

import (
	"encoding/json"
	"reflect"
	"regexp"
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
		assert.Equal(t, []any{"auto", "extension", "cdp-inspect", "cdp-debugger", "local", "playwright"},
			in.Properties["browser_mode"].Enum, "%s: browser_mode's values are the providers' modes and aliases", tool.Name)
		for name, p := range in.Properties {
			if name == "timeout_ms" || name == "conversation_id" {
				continue // described once, in the instructions (checked below)
			}
			assert.NotEmpty(t, p.Description, "%s.%s has a description a model can act on", tool.Name, name)
		}
		assert.NotContains(t, in.Required, "browser_mode", tool.Name)
		assert.Nil(t, tool.OutputSchema, "%s: the structured content goes without an output schema", tool.Name)
	}
	assert.ElementsMatch(t, mcptools.ToolNames, names)
	init := cs.InitializeResult()
	require.NotNil(t, init)
	assert.Contains(t, init.Instructions, "timeout_ms is the deadline")
	assert.Contains(t, init.Instructions, "conversation_id names the conversation")

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
	assert.Equal(t, []any{tools.WaitLoad, tools.WaitDOMContentLoaded, tools.WaitNone}, byName("browser_navigate").Properties["wait_until"].Enum)
	assert.Equal(t, []any{tools.SnapshotSourceDOM, tools.SnapshotSourceAccessibility}, byName("browser_snapshot").Properties["source"].Enum)
}

// A value outside a closed set is refused by the schema, as a tool error,
// before any provider is asked.
func TestValueOutsideAnEnumIsAToolError(t *testing.T) {
	tl, provs := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	for _, c := range []struct{ tool, prop, value string }{
		{"browser_navigate", "wait_until", "networkidle"},
		{"browser_snapshot", "source", "html"},
	} {
		res := call(t, cs, c.tool, with(validArgs[c.tool], c.prop, c.value))
		require.True(t, res.IsError, c.tool)
		assert.Contains(t, text(res), c.prop, c.tool)
	}
	for _, p := range provs {
		assert.Zero(t, p.Proposed(), p.K)
	}
}

// maxToolsListBytes is the budget of the whole tools/list answer: what
// every client loads into its model's context before the first call.
const maxToolsListBytes = 25 << 10

func TestToolsListFitsItsBudget(t *testing.T) {
	tl, _ := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	res, err := cs.ListTools(testCtx(t), nil)
	require.NoError(t, err)
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(raw), maxToolsListBytes, "tools/list is %d bytes", len(raw))
}

// internalID matches requirement ids (SEL-1, TOOL-12) and issue or stop
// numbers; standards' names (UTF-16, SHA-256) are not ids.
var (
	internalID = regexp.MustCompile(`\b[A-Z]{2,5}-[0-9]+\b|(?i)\b(issue|stop)\s+#?[0-9]+`)
	standard   = regexp.MustCompile(`^(UTF|SHA|ISO|RFC)-`)
)

// What a client shows or a model reads — every tool as listed, the
// instructions, the resource templates — carries no internal id.
func TestDescriptionsCarryNoInternalIDs(t *testing.T) {
	tl, _ := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl, Screenshots: mcptools.ScreenshotResourceLink})
	cs := connect(t, ms, nil)
	check := func(where, s string) {
		t.Helper()
		for _, m := range internalID.FindAllString(s, -1) {
			if !standard.MatchString(m) {
				t.Errorf("%s carries the internal id %q: %s", where, m, s)
			}
		}
	}
	check("instructions", cs.InitializeResult().Instructions)
	list, err := cs.ListTools(testCtx(t), nil)
	require.NoError(t, err)
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool)
		require.NoError(t, err)
		check(tool.Name, string(raw))
	}
	tmpl, err := cs.ListResourceTemplates(testCtx(t), nil)
	require.NoError(t, err)
	for _, rt := range tmpl.ResourceTemplates {
		check("resource template "+rt.Name, rt.Title+" "+rt.Description)
	}
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
		{mcptools.ActArgs{}, tools.ActInput{}},
		{mcptools.ObserveArgs{}, tools.ObserveInput{}},
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
	assert.Contains(t, desc(mcptools.SnapshotArgs{}, "MaxNodes"), itoa(tools.MaxSnapshotNodes))
	assert.Contains(t, desc(mcptools.SnapshotArgs{}, "MaxNodes"), itoa(tools.DefaultSnapshotMaxNodes))
	assert.Contains(t, desc(mcptools.ExtractArgs{}, "MaxChars"), itoa(tools.MaxExtractChars))
	assert.Contains(t, desc(mcptools.ExtractArgs{}, "MaxChars"), itoa(tools.DefaultExtractMaxChars))
	assert.Contains(t, desc(mcptools.LinksArgs{}, "Limit"), itoa(tools.MaxLinksLimit))
	assert.Contains(t, desc(mcptools.LinksArgs{}, "Limit"), itoa(tools.DefaultLinksLimit))
}

// The shared properties are explained once, in the instructions and in
// browser_status's description: every mode with its aliases, the timeout
// limits.
func TestSharedPropertiesAreExplainedOnce(t *testing.T) {
	tl, _ := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	list, err := cs.ListTools(testCtx(t), nil)
	require.NoError(t, err)
	var status string
	for _, tool := range list.Tools {
		if tool.Name == "browser_status" {
			status = tool.Description
		}
	}
	msText := func(d interface{ Milliseconds() int64 }) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	for _, text := range []string{cs.InitializeResult().Instructions, status} {
		assert.Contains(t, text, "auto, extension, cdp-inspect (alias cdp-debugger), local (alias playwright)")
		assert.Contains(t, text, "never fall back")
		for _, d := range []interface{ Milliseconds() int64 }{tools.MaxTimeout, tools.DefaultNavigateTimeout, tools.DefaultWaitTimeout, tools.DefaultActionTimeout} {
			assert.Contains(t, text, msText(d))
		}
		assert.Contains(t, text, "conversation_id")
	}
}
