package skills

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAgentMemoryKeys(t *testing.T) {
	memSkill := "---\nskill: memory\ndescription: Memory\ntools: [memory_search, memory_save, memory_forget]\n---\nRemember.\n"
	knownTools := known("current_time", "memory_search", "memory_save", "memory_forget")
	cases := []struct {
		name         string
		front        string
		wantMemory   MemoryMode
		wantRemember bool
		wantSkills   []string
		wantErr      error
	}{
		{"default off", "", MemoryOff, false, []string{"clock"}, nil},
		{"off", "memory: off\n", MemoryOff, false, []string{"clock"}, nil},
		{"tools adds the memory skill", "memory: tools\n", MemoryTools, false, []string{"clock", "memory"}, nil},
		{"recall adds the memory skill", "memory: recall\nremember: true\n", MemoryRecall, true, []string{"clock", "memory"}, nil},
		{"listed skill is not added twice", "memory: recall\nskills: [memory, clock]\n", MemoryRecall, false, []string{"memory", "clock"}, nil},
		{"remember alone", "remember: true\n", MemoryOff, true, []string{"clock"}, nil},
		{"bad mode", "memory: always\n", "", false, nil, ErrBadMemory},
		{"remember is a boolean", "remember: sometimes\n", "", false, nil, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, err := loadAgentA(t, knownTools, c.front, "memory.md", memSkill)
			if c.wantErr != nil {
				checkAgentAError(t, err, c.wantErr, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := cat.Agent("a")
			if a.Memory != c.wantMemory || a.Remember != c.wantRemember {
				t.Errorf("memory %q remember %v, want %q %v", a.Memory, a.Remember, c.wantMemory, c.wantRemember)
			}
			if diff := cmp.Diff(c.wantSkills, a.Skills); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
		})
	}
}
