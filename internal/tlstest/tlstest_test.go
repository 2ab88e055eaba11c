package tlstest_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/browserchain/browserchain/internal/tlstest"
)

// A server using the certificate, loaded back from its files, is trusted by
// a client with Pool and nothing else.
func TestCertFilesServeAndPoolTrustsThem(t *testing.T) {
	c := tlstest.Cert(t)
	certFile, keyFile := tlstest.WriteFiles(t, c, t.TempDir())
	loaded, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{loaded}}
	srv.StartTLS()
	defer srv.Close()
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tlstest.Pool(c)}}}
	resp, err := trusting.Get(srv.URL)
	if err != nil {
		t.Fatalf("a client trusting the pool: %v", err)
	}
	resp.Body.Close()
	if _, err := (&http.Client{Transport: &http.Transport{}}).Get(srv.URL); err == nil {
		t.Fatal("a client with the system roots trusted the test certificate")
	}
	if tlstest.SPKIHash(c) == "" {
		t.Fatal("empty SPKI hash")
	}
}
