package cli

import (
	"embed"
	"path"
)

// help holds each command's --help text after its flags: prose for
// people, kept beside the code as text so it reads and diffs as the docs
// it is.
//
//go:embed help/*.txt
var help embed.FS

// helpText is help/NAME.txt; a missing file is a build mistake the help
// tests catch at once.
func helpText(name string) string {
	b, err := help.ReadFile(path.Join("help", name+".txt"))
	if err != nil {
		panic("cli: no help text " + name + ": " + err.Error())
	}
	return string(b)
}
