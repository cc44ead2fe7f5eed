package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (kp keyPair) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw})
}

func (kp keyPair) keyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(kp.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// pki is everything the control plane needs to trust itself and its admin.
type pki struct {
	ca, serving, admin keyPair
	serviceAccount     *rsa.PrivateKey
}

func newPKI(now time.Time) (*pki, error) {
	ca, err := newCert(now, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubectl-topology-local-ca"},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the local CA: %w", err)
	}
	serving, err := newCert(now, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, &ca)
	if err != nil {
		return nil, fmt.Errorf("creating the kube-apiserver serving certificate: %w", err)
	}
	admin, err := newCert(now, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "local-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, &ca)
	if err != nil {
		return nil, fmt.Errorf("creating the admin client certificate: %w", err)
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("creating the service account signing key: %w", err)
	}
	return &pki{ca: ca, serving: serving, admin: admin, serviceAccount: sa}, nil
}

func newCert(now time.Time, tmpl *x509.Certificate, parent *keyPair) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

// write stores the PKI under dir/pki for the control plane's flags.
func (p *pki) write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string][]byte{"ca.crt": p.ca.certPEM(), "apiserver.crt": p.serving.certPEM(), "admin.crt": p.admin.certPEM()}
	for name, kp := range map[string]keyPair{"ca.key": p.ca, "apiserver.key": p.serving, "admin.key": p.admin} {
		k, err := kp.keyPEM()
		if err != nil {
			return err
		}
		files[name] = k
	}
	saDER, err := x509.MarshalPKCS8PrivateKey(p.serviceAccount)
	if err != nil {
		return err
	}
	files["sa.key"] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saDER})
	pubDER, err := x509.MarshalPKIXPublicKey(&p.serviceAccount.PublicKey)
	if err != nil {
		return err
	}
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// loadOrNewPKI reuses the PKI written to dir by an earlier start, so that a
// restarted control plane keeps its CA and whatever trusts it (a running
// agent, a kubeconfig copied elsewhere) keeps working; it makes a new one
// when there is none or it expires within a day.
func loadOrNewPKI(dir string, now time.Time) (*pki, error) {
	if p, err := readPKI(dir); err == nil && p.ca.cert.NotAfter.After(now.Add(24*time.Hour)) &&
		p.serving.cert.NotAfter.After(now.Add(24*time.Hour)) && p.admin.cert.NotAfter.After(now.Add(24*time.Hour)) {
		return p, nil
	}
	return newPKI(now)
}

func readPKI(dir string) (*pki, error) {
	pair := func(name string) (keyPair, error) {
		certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
		if err != nil {
			return keyPair{}, err
		}
		keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
		if err != nil {
			return keyPair{}, err
		}
		cb, _ := pem.Decode(certPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb == nil || kb == nil {
			return keyPair{}, fmt.Errorf("%s: not PEM", name)
		}
		cert, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			return keyPair{}, err
		}
		key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
		if err != nil {
			return keyPair{}, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return keyPair{}, fmt.Errorf("%s: not a signing key", name)
		}
		return keyPair{cert: cert, key: signer}, nil
	}
	var p pki
	var err error
	if p.ca, err = pair("ca"); err != nil {
		return nil, err
	}
	if p.serving, err = pair("apiserver"); err != nil {
		return nil, err
	}
	if p.admin, err = pair("admin"); err != nil {
		return nil, err
	}
	saPEM, err := os.ReadFile(filepath.Join(dir, "sa.key"))
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(saPEM)
	if b == nil {
		return nil, fmt.Errorf("sa.key: not PEM")
	}
	sa, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	rsaKey, ok := sa.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("sa.key: not an RSA key")
	}
	p.serviceAccount = rsaKey
	return &p, nil
}
