package app

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startAtOnce launches one `cellb serve` per argument list at the same
// moment and waits for each to listen or exit. A process that exits is
// reported with its log; the test's cleanup kills the others.
func startAtOnce(t *testing.T, bin string, names []string, args [][]string, env ...string) ([]*proc, []error) {
	t.Helper()
	procs := make([]*proc, len(names))
	urls := make([]chan string, len(names))
	outs := make([]io.Reader, len(names))
	for i, name := range names {
		logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		p := &proc{name: name, logf: logf, args: append([]string{"serve", "--listen", "127.0.0.1:0"}, args[i]...)}
		p.cmd = exec.Command(bin, p.args...)
		p.cmd.Stderr = logf
		if len(env) > 0 {
			p.cmd.Env = append(os.Environ(), env...)
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		procs[i], urls[i], outs[i] = p, make(chan string, 1), out
		t.Cleanup(func() { p.kill(); logf.Close() })
	}
	// Every process is forked before any is waited for.
	for i, p := range procs {
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(outs[i])
		go func() {
			for lines.Scan() {
				if u, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
					urls[i] <- u
					return
				}
			}
			urls[i] <- "" // stdout closed: the process exited
		}()
	}
	errs := make([]error, len(procs))
	for i, p := range procs {
		select {
		case p.url = <-urls[i]:
		case <-time.After(60 * time.Second):
			errs[i] = fmt.Errorf("%s did not start within a minute", p.name)
			continue
		}
		if p.url == "" {
			werr := p.cmd.Wait()
			p.dead = true
			log, _ := os.ReadFile(p.logf.Name())
			errs[i] = fmt.Errorf("%s exited (%v):\n%s", p.name, werr, log)
		}
	}
	return procs, errs
}

// TestFleetOfProcessesStartsAllAtOnce starts three `cellb serve` nodes
// with peers at the same moment on a fresh bucket prefix, as the replicas
// of a deployment start. The bucket (an S3 endpoint) holds the second
// listing of node leases until a node lease was written, so one starter
// always finds another already live after acting on a marker that was not
// final yet — the interleaving that stopped a node with "nodes are live".
// Every node must start, and each answers for a counter whichever node
// owns it.
func TestFleetOfProcessesStartsAllAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	fake := newFakeS3(false)
	fake.holdSecondNodesList = make(chan struct{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	bucket := "s3://b/fleet?region=us-east-1&endpoint=" + srv.URL
	var names []string
	var args [][]string
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		names = append(names, name)
		args = append(args, []string{"--bucket", bucket, "--node", name, "--data", t.TempDir(), "--peer-listen", "127.0.0.1:0"})
	}
	procs, errs := startAtOnce(t, bin, names, args, fakeS3Env()...)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if !fake.held() {
		t.Fatal("no starter listed the node leases twice before one was written: the interleaving under test did not happen")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for i, p := range procs {
		resp, err := client.Post(p.url+"/counter/c", "", nil)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var v struct{ Value int64 }
		err = jsonDecode(resp, &v)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil || v.Value != int64(i+1) {
			t.Fatalf("%s answered %d %v value %d, want 200 and %d", p.name, resp.StatusCode, err, v.Value, i+1)
		}
	}
}

// fakeS3Env points a child's AWS SDK at a fake endpoint with dummy
// credentials and no checksums beyond what S3 requires.
func fakeS3Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_REQUEST_CHECKSUM_CALCULATION=when_required", "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3="}
}

// fakeS3 is an in-memory S3 endpoint speaking the part of the API CellB
// uses (path-style PUT, GET, HEAD, DELETE of one object, ListObjectsV2 in
// one page; single-part ETags are the body's MD5, as on S3). With
// ignoreConditions it drops If-None-Match and If-Match, as some
// S3-compatible services do: every PUT applies. It records every key
// written.
type fakeS3 struct {
	ignoreConditions bool
	// holdSecondNodesList, when set, holds the second listing of
	// <prefix>/nodes/ until a node lease is written (or 30 s pass).
	holdSecondNodesList chan struct{}

	mu         sync.Mutex
	objects    map[string]fakeObject
	written    []string
	nodesLists int
	leaseSeen  bool
	didHold    bool
}

type fakeObject struct {
	data []byte
	meta http.Header
}

func newFakeS3(ignoreConditions bool) *fakeS3 {
	return &fakeS3{ignoreConditions: ignoreConditions, objects: map[string]fakeObject{}}
}

func (s *fakeS3) held() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.didHold
}

func fakeETag(b []byte) string { sum := md5.Sum(b); return `"` + hex.EncodeToString(sum[:]) + `"` }

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, code)
}

func (s *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Path-style: /<bucket>[/<key>].
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	listing := r.Method == http.MethodGet && key == "" && r.URL.Query().Get("list-type") == "2"
	if listing && strings.HasSuffix(r.URL.Query().Get("prefix"), "nodes/") && s.holdSecondNodesList != nil {
		s.mu.Lock()
		s.nodesLists++
		hold := s.nodesLists == 2 && !s.leaseSeen
		s.didHold = s.didHold || hold
		s.mu.Unlock()
		if hold {
			select {
			case <-s.holdSecondNodesList:
			case <-time.After(30 * time.Second):
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPut && key != "":
		if strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
			http.Error(w, "aws-chunked bodies are not supported by this fake", http.StatusNotImplemented)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cur, exists := s.objects[key]
		if !s.ignoreConditions {
			if r.Header.Get("If-None-Match") == "*" && exists {
				s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
				return
			}
			if m := r.Header.Get("If-Match"); m != "" && (!exists || fakeETag(cur.data) != m) {
				s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
				return
			}
		}
		meta := http.Header{}
		for k, v := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-amz-meta-") {
				meta[k] = v
			}
		}
		s.objects[key] = fakeObject{body, meta}
		s.written = append(s.written, key)
		if strings.Contains(key, "/nodes/") && s.holdSecondNodesList != nil && !s.leaseSeen {
			s.leaseSeen = true
			close(s.holdSecondNodesList)
		}
		w.Header().Set("ETag", fakeETag(body))
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && key != "":
		o, ok := s.objects[key]
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		for k, v := range o.meta {
			w.Header()[k] = v
		}
		w.Header().Set("ETag", fakeETag(o.data))
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
		if r.Method == http.MethodGet {
			w.Write(o.data)
		}
	case r.Method == http.MethodDelete && key != "":
		delete(s.objects, key)
		w.WriteHeader(http.StatusNoContent)
	case listing:
		s.list(w, r)
	default:
		http.Error(w, "not supported by this fake", http.StatusNotImplemented)
	}
}

// list answers ListObjectsV2 in one page.
func (s *fakeS3) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	type content struct {
		Key          string
		LastModified string
		ETag         string
		Size         int
	}
	type common struct{ Prefix string }
	res := struct {
		XMLName        xml.Name  `xml:"ListBucketResult"`
		Name           string    `xml:"Name"`
		Prefix         string    `xml:"Prefix"`
		KeyCount       int       `xml:"KeyCount"`
		IsTruncated    bool      `xml:"IsTruncated"`
		Contents       []content `xml:"Contents"`
		CommonPrefixes []common  `xml:"CommonPrefixes"`
	}{Name: "b", Prefix: prefix}
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				p := k[:len(prefix)+i+len(delim)]
				if n := len(res.CommonPrefixes); n == 0 || res.CommonPrefixes[n-1].Prefix != p {
					res.CommonPrefixes = append(res.CommonPrefixes, common{p})
				}
				continue
			}
		}
		o := s.objects[k]
		res.Contents = append(res.Contents, content{k, time.Now().UTC().Format(time.RFC3339), fakeETag(o.data), len(o.data)})
	}
	res.KeyCount = len(res.Contents) + len(res.CommonPrefixes)
	w.Header().Set("Content-Type", "application/xml")
	xml.NewEncoder(w).Encode(res)
}

// TestServeRefusesABucketThatIgnoresConditions: `cellb serve` on an S3
// bucket that ignores conditional headers does not start. It exits 1 with
// the start-up probe's own message, having written nothing to the bucket
// but the probe's key, which it removed.
func TestServeRefusesABucketThatIgnoresConditions(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := cellbBinary(t)
	fake := newFakeS3(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--node", "n1",
		"--bucket", "s3://b/fleet?region=us-east-1&endpoint="+srv.URL)
	cmd.Env = append(os.Environ(), fakeS3Env()...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Read until the process exits, or until it says it is listening.
	var stdout strings.Builder
	listened := false
	for lines := bufio.NewScanner(out); !listened && lines.Scan(); {
		stdout.WriteString(lines.Text() + "\n")
		listened = strings.HasPrefix(lines.Text(), "listening on ")
	}
	if listened {
		cmd.Process.Kill()
	}
	err = cmd.Wait()
	if listened {
		t.Fatalf("cellb serve started on a bucket that ignores conditional headers\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	}
	const want = "cellb serve: bucket probe failed at step 2 (create-only again): the bucket ignores If-None-Match: * (a second create-only write of the same key was applied)\n"
	if cmd.ProcessState.ExitCode() != 1 || !strings.HasSuffix(stderr.String(), want) {
		t.Fatalf("exit %v, stderr:\n%s\nwant exit status 1 and a last line %q", err, &stderr, want)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.written) == 0 {
		t.Fatal("the probe never reached the bucket")
	}
	for _, k := range fake.written {
		if !strings.HasPrefix(k, "fleet/probe/cas-") {
			t.Fatalf("serve wrote %s to a bucket that failed the probe (writes: %v)", k, fake.written)
		}
	}
	if len(fake.objects) != 0 {
		t.Fatalf("serve left %d objects in the bucket", len(fake.objects))
	}
}
