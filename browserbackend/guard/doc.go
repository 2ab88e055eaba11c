// Package guard holds the policy a host application puts a browser under:
// where its pages may go (an allow-list of hosts), the
// private-network block that holds whatever the list says, whether writes
// are allowed, and the one error vocabulary of the guards.
//
//	g, err := guard.New(guard.Policy{AllowedDomains: []string{"app.example.com", "*.example.com"}})
//	if err != nil { … }                       // validation_failed, naming allowed_domains
//	err = g.CheckURL(ctx, "http://0x7f.1/")   // forbidden: private_network: 127.0.0.0/8
//
// The tools in browserbackend/tools apply a Guard on every backend
// (tools.Options.Guard, or per invocation with NewContext). A Guard controls
// where the agent's pages go; it does not filter the subresources a page
// loads (fetch, XHR, images, iframes it embeds) and is not an exfiltration
// boundary for a page that is already open.
package guard
