// Package eventhub carries events from an assistant runtime to connected
// clients (browser extensions, desktop apps) over Server-Sent Events, and
// tracks which clients are connected (SPEC §3, HUB-1 … HUB-6).
package eventhub
