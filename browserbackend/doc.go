// Package browserbackend picks, for every tool call, the browser backend that
// serves it, and fails over between backends on transport errors (SPEC §2,
// SEL-1 … SEL-15).
package browserbackend
