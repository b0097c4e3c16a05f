// Command render-job renders a job directory with bosh-cli's own renderer
// and writes it out as the BOSH agent lays out /var/vcap/jobs/NAME:
//
//	go run ./cmd/render-job -job ../jobs/cellguard -properties props.yml -o /tmp/jobs/cellguard
//
// props.yml holds the instance group job's properties block
// ("cellguard: {daemons: [...]}"); without it the spec defaults apply.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cloudfoundry/cellguard/spec/render"
)

func main() {
	jobDir := flag.String("job", "", "job directory (jobs/NAME)")
	propsPath := flag.String("properties", "", "YAML file with the job's properties (optional)")
	out := flag.String("o", "", "output directory")
	flag.Parse()
	if *jobDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: render-job -job jobs/NAME [-properties props.yml] -o DIR")
		os.Exit(2)
	}
	props := ""
	if *propsPath != "" {
		b, err := os.ReadFile(*propsPath)
		if err != nil {
			fmt.Fprintf(os.Stderr, "render-job: error: read properties: %v\n", err)
			os.Exit(2)
		}
		props = string(b)
	}
	j, err := render.Load(*jobDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render-job: error: %v\n", err)
		os.Exit(2)
	}
	r, err := j.Render(props)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render-job: error: render %s: %v\n", j.Manifest.Name, err)
		os.Exit(1)
	}
	if err := r.WriteTo(*out); err != nil {
		fmt.Fprintf(os.Stderr, "render-job: error: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("rendered job %s into %s (%d files)\n", j.Manifest.Name, *out, len(r))
}
