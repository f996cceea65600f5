// Package testpki makes the certificates tests need: a CA, server
// certificates for 127.0.0.1, and client certificates signed by the CA or
// self-signed (a stranger's), written as PEM files.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA whose certificate is Dir/ca.pem.
type PKI struct {
	Dir    string
	CA     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

// New makes a CA in dir.
func New(t testing.TB, dir string) *PKI {
	t.Helper()
	p := &PKI{Dir: dir, caKey: key(t), serial: 1}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.CA, _ = x509.ParseCertificate(der)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", der)
	return p
}

func key(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Kind is what a certificate is for.
type Kind int

const (
	Server   Kind = iota // 127.0.0.1, signed by the CA
	Client               // DNS name cn, signed by the CA
	Stranger             // a client's, self-signed
)

// Issue writes Dir/NAME.crt and Dir/NAME.key and returns their paths and
// the certificate's serial number (each Issue has a new one).
func (p *PKI) Issue(t testing.TB, name, cn string, kind Kind) (certFile, keyFile string, serial int64) {
	t.Helper()
	p.serial++
	k := key(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{cn},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if kind == Server {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	parent, signer := p.CA, p.caKey
	if kind == Stranger {
		parent, signer = tmpl, k
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.Dir, name+".crt"), filepath.Join(p.Dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile, p.serial
}
