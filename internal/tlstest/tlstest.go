// Package tlstest makes the TLS material the remote-connection tests need: a
// self-signed certificate for 127.0.0.1, the forms a Go client
// (x509.CertPool), a server started from files (PEM) and a test Chromium
// (--ignore-certificate-errors-spki-list) take to trust it. Test use only.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert returns a self-signed ECDSA P-256 certificate for the IP 127.0.0.1,
// valid from an hour ago to an hour from now, with its Leaf parsed. It fails
// t when the standard library cannot make one.
func Cert(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("tlstest: key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "browserchain test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("tlstest: certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("tlstest: parse: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// SPKIHash returns the base64 SHA-256 of c's public key, the form Chromium's
// --ignore-certificate-errors-spki-list takes.
func SPKIHash(c tls.Certificate) string {
	sum := sha256.Sum256(c.Leaf.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Pool returns a certificate pool that trusts c.
func Pool(c tls.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Leaf)
	return p
}

// WriteFiles writes c's certificate and key as PEM files (mode 0600) into
// dir and returns their paths.
func WriteFiles(t testing.TB, c tls.Certificate, dir string) (certFile, keyFile string) {
	t.Helper()
	kder, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatalf("tlstest: key: %v", err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, b := range map[string]*pem.Block{
		certFile: {Type: "CERTIFICATE", Bytes: c.Certificate[0]},
		keyFile:  {Type: "EC PRIVATE KEY", Bytes: kder},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatalf("tlstest: %v", err)
		}
	}
	return certFile, keyFile
}
