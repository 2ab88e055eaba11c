package browserbackend

// Remediation returns a checklist for a person whose backend of kind k failed
// with code (SEL-7). Unknown combinations get the backend's generic advice.
// The texts are stable enough to show in a UI; match on codes, not on them.
func Remediation(k Kind, code string) []string {
	switch k {
	case KindExtension:
		switch code {
		case CodeNoClient:
			return []string{
				"Install the browserchain Chrome extension (load examples/extension unpacked) and pair it with the assistant.",
				"Open the extension popup and check that it shows \"connected\"; press Connect if it is paused.",
			}
		case CodeExtensionRequired:
			return []string{"This operation needs the Chrome extension; pair the extension or use browser_mode \"auto\"."}
		}
		return []string{
			"Ensure the Chrome extension is installed, paired and shows \"connected\" in its popup.",
			"If the popup says \"auth required\", pair it again.",
		}
	case KindHostBridge:
		return []string{
			"Ensure the desktop app (bridge) is running and connected to the assistant.",
			"Ensure Chrome on the desktop has remote debugging enabled for the bridge (chrome://inspect/#remote-debugging).",
		}
	case KindCDPInspect:
		switch code {
		case CodeNonLoopback:
			return []string{"cdp-inspect only connects to this machine: set hostBrowser.cdpInspect.host to localhost or 127.0.0.1."}
		case CodeNonChrome, CodeInvalidResponse:
			return []string{"Something other than Chrome answers on the configured host and port: check hostBrowser.cdpInspect.port."}
		case CodeTimeout:
			return []string{
				"Chrome did not answer the DevTools probe in time: check that it is not hung, or raise hostBrowser.cdpInspect.probeTimeoutMs.",
			}
		case CodeNoTargets:
			return []string{"Chrome has no page open that can be attached to: open a tab."}
		case CodeCooldown:
			return []string{"cdp-inspect failed moments ago and is cooling down; retry after the cooldown or pin browser_mode \"cdp-inspect\"."}
		}
		return []string{
			"Start Chrome with --remote-debugging-port=9222 (and a dedicated --user-data-dir), or enable remote debugging at chrome://inspect/#remote-debugging.",
			"Check hostBrowser.cdpInspect.host and .port match the running Chrome.",
		}
	case KindLocal:
		return []string{
			"Install Chromium (Debian: apt-get install chromium) and the Playwright driver: run scripts/setup.sh.",
			"If Chromium lives elsewhere, set the local backend's executable path.",
		}
	}
	return nil
}
