package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCreateDropsTheCapabilityFromEverySet(t *testing.T) {
	bundle := t.TempDir()
	config := `{"ociVersion":"1.0.2","process":{"args":["/sbin/init"],"capabilities":{
		"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_SYS_ADMIN"],
		"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_CHOWN","CAP_SYS_RESOURCE"]}},"root":{"path":"rootfs"}}`
	path := filepath.Join(bundle, "config.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rewrite([]string{"--root", "/run/docker/runtime-runc/moby", "--log", "x.log", "create", "--bundle", bundle, "--pid-file", "p", "abc"}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Process struct {
			Args         []string            `json:"args"`
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
		Root map[string]any `json:"root"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for set, caps := range doc.Process.Capabilities {
		if slices.Contains(caps, dropped) {
			t.Errorf("%s still has %s: %v", set, dropped, caps)
		}
	}
	if want := []string{"CAP_CHOWN", "CAP_SYS_ADMIN"}; !slices.Equal(doc.Process.Capabilities["bounding"], want) {
		t.Errorf("bounding is %v, want %v: only the one capability goes", doc.Process.Capabilities["bounding"], want)
	}
	if doc.Root["path"] != "rootfs" || doc.Process.Args[0] != "/sbin/init" {
		t.Errorf("the rest of the config changed: %s", data)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want it kept at 0600", info.Mode().Perm())
	}
}

func TestExecDropsItFromTheProcessFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(p, []byte(`{"args":["sh"],"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_NET_ADMIN"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewrite([]string{"exec", "--process=" + p, "--detach", "abc"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if string(data) != `{"args":["sh"],"capabilities":{"bounding":["CAP_NET_ADMIN"]}}` {
		t.Errorf("process file now %s", data)
	}
}

func TestOtherCommandsTouchNothing(t *testing.T) {
	if err := rewrite([]string{"--root", "/x", "state", "abc"}); err != nil {
		t.Fatal(err)
	}
	if err := rewrite([]string{"--version"}); err != nil {
		t.Fatal(err)
	}
}
