package plugin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
)

// inputNamespace is the namespace for input objects that name none: -n, else
// "default". Offline commands do not read the kubeconfig's namespace, so the
// same files plan the same way on every machine.
func inputNamespace(flags *genericclioptions.ConfigFlags) string {
	if flags != nil && flags.Namespace != nil && *flags.Namespace != "" {
		return *flags.Namespace
	}
	return "default"
}

// readBundle reads files, directories (their .yaml, .yml and .json files,
// sorted) and "-" for standard input into one bundle, and warns on errOut of
// each field converting upstream's v1beta1 objects dropped and each unknown
// field dropped; strict refuses unknown fields instead.
func readBundle(paths []string, stdin io.Reader, errOut io.Writer, namespace string, strict bool) (*bundle.Bundle, error) {
	b := bundle.New()
	b.Strict = strict
	for _, p := range paths {
		if p == "-" {
			if err := b.Read(stdin, "<stdin>", namespace); err != nil {
				return nil, err
			}
			continue
		}
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", f, err)
			}
			err = b.Read(fh, f, namespace)
			fh.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	for _, w := range b.Warnings {
		fmt.Fprintf(errOut, "Warning: %s\n", w)
	}
	return b, nil
}

func expand(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
