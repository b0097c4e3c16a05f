package netns

import "bytes"

// SocketTables are the files under /proc/<pid>/net that list the sockets
// of the namespace the process is in, each with the column of the socket's
// inode in data lines and, to check the kernel still writes that layout, in
// the header line (where the inet tables split "tx_queue rx_queue" and
// "tr tm->when" into two words each). Sockets of other families (vsock,
// alg, tipc...) are in none of them: the scan asks those one by one.
var SocketTables = []struct {
	Name           string
	Col, HeaderCol int
	Header         string
}{
	{"tcp", 9, 11, "inode"}, {"tcp6", 9, 11, "inode"},
	{"udp", 9, 11, "inode"}, {"udp6", 9, 11, "inode"},
	{"udplite", 9, 11, "inode"}, {"udplite6", 9, 11, "inode"},
	{"raw", 9, 11, "inode"}, {"raw6", 9, 11, "inode"},
	{"icmp", 9, 11, "inode"}, {"icmp6", 9, 11, "inode"},
	{"unix", 6, 6, "Inode"},
	{"netlink", 9, 9, "Inode"},
	{"packet", 8, 8, "Inode"},
}

// AddTableSockets adds the socket inodes that table i of SocketTables,
// read as b, lists. A header other than the expected one adds nothing: a
// wrong column would make foreign sockets look known.
func AddTableSockets(set map[uint64]bool, i int, b []byte) {
	t := SocketTables[i]
	header, rest, _ := bytes.Cut(b, []byte{'\n'})
	if h := bytes.Fields(header); len(h) <= t.HeaderCol || string(h[t.HeaderCol]) != t.Header {
		return
	}
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		if ino, ok := field(line, t.Col); ok && ino != 0 {
			set[ino] = true
		}
	}
}

// field parses the col-th space-separated word of line as a decimal.
func field(line []byte, col int) (uint64, bool) {
	for i := 0; ; i++ {
		line = bytes.TrimLeft(line, " ")
		if len(line) == 0 {
			return 0, false
		}
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		if i == col {
			var v uint64
			for _, c := range line[:end] {
				if c < '0' || c > '9' {
					return 0, false
				}
				v = v*10 + uint64(c-'0')
			}
			return v, end > 0
		}
		line = line[end:]
	}
}
