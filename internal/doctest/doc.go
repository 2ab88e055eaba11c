// Package doctest holds only tests: they keep the README and the pages in
// docs/ runnable. They build every ```go block that is a complete program
// (its first line is a package clause), check that such blocks are gofmt'd,
// that every flag a page passes to an example program exists, that every
// relative link resolves, and they run the reference server's documented
// curl against a server on a loopback port. Nothing here starts a browser
// or uses the network beyond loopback.
package doctest
