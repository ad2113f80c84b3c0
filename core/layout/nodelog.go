package layout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The node log (celld's fleet durability, docs/durability.md "The node
// log") keeps, per process session of a node, the bundles of every cell's
// commits the node flushed:
//
//	log/<node>/<generation>/bundle/e<logepoch>-<seq:08>.ltxb
//	log/<node>/<generation>.e<logepoch>.loss.json
//
// <generation> is the session's ownership_index_generation; <logepoch> is
// the log epoch (decimal, unpadded) and <seq> a per-session counter
// (decimal, zero-padded to 8 digits, not hex).

// NodeLogPrefix is where every node's log lives: "log/".
const NodeLogPrefix = "log/"

// NodeLogStates are the states of a node record's log member.
const (
	NodeLogOpen       = "open"
	NodeLogRecovering = "recovering"
	NodeLogSealed     = "sealed"
)

// NodeLogsPrefix is one node's logs, all sessions: "log/<node>/".
func NodeLogsPrefix(node string) string { return NodeLogPrefix + node + "/" }

// SessionPrefix is one session's log objects: "log/<node>/<generation>/".
func SessionPrefix(node, generation string) string {
	return NodeLogsPrefix(node) + generation + "/"
}

// BundlePrefix is one session's bundles: "log/<node>/<generation>/bundle/".
func BundlePrefix(node, generation string) string {
	return SessionPrefix(node, generation) + "bundle/"
}

// BundleKey is one bundle's key.
func BundleKey(node, generation string, logEpoch, seq uint64) string {
	return fmt.Sprintf("%se%d-%08d.ltxb", BundlePrefix(node, generation), logEpoch, seq)
}

// SessionLeader is how celld names a session in its records ("leader"):
// "<node>/<generation>".
func SessionLeader(node, generation string) string { return node + "/" + generation }

// LossKey is the loss record a recoverer writes when it declares a bounded
// loss of a session's log epoch:
// "log/<node>/<generation>.e<logepoch>.loss.json".
func LossKey(node, generation string, logEpoch uint64) string {
	return fmt.Sprintf("%s%s.e%d.loss.json", NodeLogsPrefix(node), generation, logEpoch)
}

// BundleFile is a bundle key, parsed.
type BundleFile struct {
	Key        string
	Node       string
	Generation string
	LogEpoch   uint64
	Seq        uint64
}

// ParseBundleKey parses a bundle key. ok is false for anything else.
func ParseBundleKey(key string) (BundleFile, bool) {
	rest, ok := strings.CutPrefix(key, NodeLogPrefix)
	if !ok {
		return BundleFile{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" || parts[2] != "bundle" {
		return BundleFile{}, false
	}
	name, ok := strings.CutSuffix(parts[3], ".ltxb")
	if !ok {
		return BundleFile{}, false
	}
	es, ss, ok := strings.Cut(name, "-")
	if !ok {
		return BundleFile{}, false
	}
	epoch, ok := ParseEpochDir(es)
	if !ok || len(ss) < 8 || strings.TrimLeft(ss, "0123456789") != "" {
		return BundleFile{}, false
	}
	seq, err := strconv.ParseUint(ss, 10, 64)
	if err != nil || (len(ss) > 8 && ss[0] == '0') {
		return BundleFile{}, false
	}
	return BundleFile{Key: key, Node: parts[0], Generation: parts[1], LogEpoch: epoch, Seq: seq}, true
}

// SortBundles orders bundles as celld flushes them: by log epoch, then
// sequence, numerically (a lexical sort puts e10- before e9-).
func SortBundles(files []BundleFile) {
	slices.SortFunc(files, func(a, b BundleFile) int {
		if a.LogEpoch != b.LogEpoch {
			if a.LogEpoch < b.LogEpoch {
				return -1
			}
			return 1
		}
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// SessionOfKey is the node and generation a key under NodeLogPrefix
// belongs to ("log/<node>/<generation>/…" or the session's loss records
// "log/<node>/<generation>.…"). ok is false otherwise.
func SessionOfKey(key string) (node, generation string, ok bool) {
	rest, ok := strings.CutPrefix(key, NodeLogPrefix)
	if !ok {
		return "", "", false
	}
	node, rest, ok = strings.Cut(rest, "/")
	if !ok || node == "" || rest == "" {
		return "", "", false
	}
	if g, _, found := strings.Cut(rest, "/"); found {
		return node, g, g != ""
	}
	g, _, found := strings.Cut(rest, ".")
	return node, g, found && g != ""
}
