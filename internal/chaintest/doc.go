// Package chaintest holds end-to-end tests of the whole chain on real
// browsers: the Selector with the real cdp-inspect and local providers,
// Chromium processes started and killed by the tests. It has no non-test code.
package chaintest
