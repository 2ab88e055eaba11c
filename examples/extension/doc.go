// Package extension holds the reference Chrome extension of browserchain,
// the extension backend of the selector: a Manifest V3 extension in plain JavaScript in this
// directory (manifest.json, background.js, lib/, popup.*), loaded unpacked
// with no build step. See README.md for loading, pairing and the popup's
// health states.
//
// The Go package only names the extension's fixed identity, so a host app
// can allow it to pair, and carries its end-to-end tests, which run it in
// headless Chromium against examples/server/runtime.
package extension

// ID is the extension id Chrome derives from the public key in
// manifest.json; it is the same wherever the directory is loaded from.
const ID = "fnkhihckcobbnjjhjjacjdbbidilbmnl"

// Origin is the Origin header of the extension's requests, the value to put
// in auth.Config.AllowedOrigins.
const Origin = "chrome-extension://" + ID
