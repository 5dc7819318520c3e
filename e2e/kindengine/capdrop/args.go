package capdrop

import "path/filepath"

// SpecFile finds, in a runc command line (global flags, then the command and its
// flags), the OCI file the command reads capabilities from: the bundle's
// config.json for create and run, the --process file for exec. process says
// whether that file is a whole config (true) or a process alone (false). ok is
// false for every other command (and for an exec given its process as arguments).
func SpecFile(args []string) (path string, process, ok bool) {
	cmd, i := "", 0
	for ; i < len(args); i++ {
		a := args[i]
		if len(a) > 0 && a[0] != '-' {
			cmd = a
			break
		}
		if globalTakesValue(a) {
			i++
		}
	}
	rest := args[min(i+1, len(args)):]
	switch cmd {
	case "create", "run":
		bundle := "."
		if v, found := flagValue(rest, "--bundle", "-b"); found {
			bundle = v
		}
		return filepath.Join(bundle, "config.json"), true, true
	case "exec":
		if v, found := flagValue(rest, "--process", "-p"); found {
			return v, false, true
		}
	}
	return "", false, false
}

// globalTakesValue says whether a runc global flag written without "=" consumes
// the next argument.
func globalTakesValue(a string) bool {
	switch a {
	case "--root", "--log", "--log-format", "--criu", "--rootless":
		return true
	}
	return false
}

// flagValue returns the value of a flag given as "--f v", "--f=v", "-f v" or "-f=v".
func flagValue(args []string, long, short string) (string, bool) {
	for i, a := range args {
		for _, f := range []string{long, short} {
			if a == f && i+1 < len(args) {
				return args[i+1], true
			}
			if len(a) > len(f) && a[:len(f)+1] == f+"=" {
				return a[len(f)+1:], true
			}
		}
		if a == "--" {
			break
		}
	}
	return "", false
}
