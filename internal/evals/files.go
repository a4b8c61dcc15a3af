package evals

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteCase writes c to dir as <id>.json (indented, so a change of a
// committed case reads as a diff), making dir if need be.
func WriteCase(dir string, c Case) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, c.ID+".json")
	return p, os.WriteFile(p, append(data, '\n'), 0o644)
}

// ReadCases reads the case files (*.json) of dir, in name order.
func ReadCases(dir string) ([]Case, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no case files (*.json) in %s", dir)
	}
	slices.Sort(names)
	out := make([]Case, 0, len(names))
	for _, n := range names {
		c, err := readCase(n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func readCase(name string) (Case, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return Case{}, err
	}
	var c Case
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return c, fmt.Errorf("case %s: %w", name, err)
	}
	if c.ID == "" {
		c.ID = strings.TrimSuffix(filepath.Base(name), ".json")
	}
	if c.Agent == "" || len(c.Messages) == 0 {
		return c, fmt.Errorf("case %s: %w", name, errors.New("a case names its agent and has messages"))
	}
	return c, nil
}
