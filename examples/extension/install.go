package extension

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Install copies the extension from srcDir (this package's directory,
// examples/extension) into dst, leaving out Go files and any config.json,
// and writes a config.json that makes the extension pair with serverURL and
// connect as soon as its service worker starts — no popup click. Tests,
// benchmarks and scripted set-ups load dst with --load-extension. dst is
// created when missing; the caller removes it.
func Install(srcDir, dst, serverURL string) error {
	err := filepath.WalkDir(srcDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(srcDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(path, ".go") || rel == "config.json" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(map[string]any{"serverUrl": serverURL, "autoConnect": true})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "config.json"), cfg, 0o644)
}
