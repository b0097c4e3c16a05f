// Package wire is the protocol between qemuvm (the host) and its guest agent
// (qemuvm/guestagent): one JSON object per line each way over the VM's
// virtio-serial port "cellguard.agent", which QEMU connects to a unix socket
// in the VM's temporary directory on the host. The host sends a Request and
// reads Responses until one carries its ID (an earlier request that timed
// out may still answer). Only test code imports this package.
package wire

// PortName is the virtio-serial port's name; udev links it as
// /dev/virtio-ports/PortName in the guest.
const PortName = "cellguard.agent"

// Operations.
const (
	OpHello = "hello" // the agent is up: Response.Hello says who it is
	OpExec  = "exec"  // run Args with Stdin, bounded by TimeoutMS
	OpPut   = "put"   // write Data to Path with Mode (atomically, parents made)
)

// Request is one operation for the agent.
type Request struct {
	ID        uint64   `json:"id"`
	Op        string   `json:"op"`
	Args      []string `json:"args,omitempty"`
	Stdin     []byte   `json:"stdin,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Path      string   `json:"path,omitempty"`
	Mode      uint32   `json:"mode,omitempty"`
	Data      []byte   `json:"data,omitempty"`
}

// Response answers the Request with the same ID.
type Response struct {
	ID     uint64 `json:"id"`
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	// Exit is the command's exit status; -1 when it did not exit normally
	// (killed by a signal, or the timeout) or did not start.
	Exit int `json:"exit"`
	// Error is set when the agent could not do what was asked (the command
	// did not start or timed out, the file could not be written).
	Error string `json:"error,omitempty"`
	Hello string `json:"hello,omitempty"`
}
