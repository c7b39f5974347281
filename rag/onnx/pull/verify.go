package pull

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Verify checks the named components (empty: DefaultNames) under dir against the pinned
// sums of Catalog, hashing every file. It returns one *FileError per missing or corrupt
// file, in a stable order; none means all is installed.
func Verify(dir string, names ...string) []error {
	if len(names) == 0 {
		names = DefaultNames
	}
	cat := Catalog()
	var problems []error
	for _, name := range names {
		c, ok := cat[name]
		if !ok {
			problems = append(problems, fmt.Errorf("unknown model %q", name))
			continue
		}
		problems = append(problems, verifyComponent(dir, name, c)...)
	}
	return problems
}

func verifyComponent(dir, name string, c Component) []error {
	var problems []error
	folder := filepath.Join(dir, name)
	if _, err := ReadManifest(folder); err != nil {
		problems = append(problems, err)
	}
	for _, f := range c.Files {
		if err := checkFile(filepath.Join(folder, f.To), FileSum{SHA256: f.SHA256, Size: f.Size}, true); err != nil {
			problems = append(problems, err)
		}
	}
	return problems
}

// Check verifies an installed component folder against its own manifest.json, the way a
// loader does before use: every listed file must exist with its recorded size, and with
// deep set its sha256 must match too. A failure is a *FileError wrapping rag.ErrModelMissing
// that names the file and the pull command.
func Check(folder string, deep bool) (*Manifest, error) {
	m, err := ReadManifest(folder)
	if err != nil {
		return nil, err
	}
	if len(m.Files) == 0 {
		return nil, corrupt(filepath.Join(folder, ManifestFile), "lists no files")
	}
	names := make([]string, 0, len(m.Files))
	for n := range m.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := checkFile(filepath.Join(folder, n), m.Files[n], deep); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func checkFile(path string, want FileSum, deep bool) error {
	f, err := os.Open(path)
	if err != nil {
		return missing(path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return missing(path, err)
	}
	if want.Size > 0 && st.Size() != want.Size {
		return corrupt(path, fmt.Sprintf("%d bytes, want %d", st.Size(), want.Size))
	}
	if !deep || want.SHA256 == "" {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return missing(path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return corrupt(path, "sha256 mismatch")
	}
	return nil
}
