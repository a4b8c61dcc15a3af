//go:build !unix

package extract

import "os"

// signaled is nil off Unix: a killed child is told by its exit status.
func (c *Child) signaled(*os.ProcessState) error { return nil }
