package handler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// A batch runs one action of several resources with one run of the base's
// batch script (docs/bases.md, "Batch scripts"). The script runs as a
// shell attempt does, with two differences: it gets no SOLAR_INPUT_*
// variables, and the file SOLAR_INPUTS names, which SOLAR_BATCH names too,
// is the batch's document
//
//	{"action": "run", "members": [{"resource": "pkg1", "task": "pkg1.run", "inputs": {...}}, ...]}
//
// with every member's inputs as its single script would see them, secret
// ones included (the file is private, as SOLAR_INPUTS always is). The
// script reports each member in its result file:
//
//	{"members": {"pkg1": {"changed": true, "failed": false, "error": "", "outputs": {}}}}
//
// keyed by resource: a batch never holds two tasks of one resource. What it
// prints is masked with the secrets of every member. The handler says what
// the file says (Result.Members); what a member missing from it, or a
// batch that failed without one, means for each task is the caller's.

// batchVar names the batch's document for a batch script.
const batchVar = "SOLAR_BATCH"

// Member is one task of a batch (Request.Members).
type Member struct {
	Resource string // its resource, the key of its result
	Task     string // its plan instance, "pkg1.run"
	// Inputs and Sensitive are the member's, as Request's are for a
	// single attempt.
	Inputs    map[string]any
	Sensitive map[string]bool
}

// MemberResult is what a batch's result file says of one member.
type MemberResult struct {
	// Changed is meaningful only when the member did not fail; absent in
	// the file, it is true (as for a single script).
	Changed bool
	Failed  bool
	// Error says why it failed, masked; never "" for a failed member.
	Error string
	// Outputs are canonical and unmasked, as Result.Outputs.
	Outputs map[string]any
}

// BatchHost is a Host that runs batches (Attempt.Batch), naming their
// document in SOLAR_BATCH. A batch whose host is not one fails with
// ErrNoBatch before anything runs: its caller runs the members one by one.
type BatchHost interface {
	Host
	// Batches reports whether the host runs batch attempts.
	Batches() bool
}

// ErrNoBatch means the host of a batch attempt cannot run batches (see
// BatchHost). Nothing was started.
var ErrNoBatch = errors.New("the host cannot run batches")

// Batches reports true: this machine runs batch scripts.
func (*Local) Batches() bool { return true }

// batchDoc is the document SOLAR_BATCH names.
type batchDoc struct {
	Action  string           `json:"action"`
	Members []batchDocMember `json:"members"`
}

type batchDocMember struct {
	Resource string         `json:"resource"`
	Task     string         `json:"task"`
	Inputs   map[string]any `json:"inputs"`
}

// runBatch runs req's batch script once for all of req.Members and reads
// its results by member.
func (s *Shell) runBatch(ctx context.Context, req Request) (Result, error) {
	doc := batchDoc{Action: req.Action, Members: make([]batchDocMember, len(req.Members))}
	seen := make(map[string]bool, len(req.Members))
	for i, m := range req.Members {
		if seen[m.Resource] {
			return Result{}, fmt.Errorf("%w: batch %s holds resource %s twice", ErrBadRequest, req.Task, m.Resource)
		}
		seen[m.Resource] = true
		inputs := m.Inputs
		if inputs == nil {
			inputs = map[string]any{}
		}
		doc.Members[i] = batchDocMember{Resource: m.Resource, Task: m.Task, Inputs: inputs}
	}
	raw, err := appendJSON(nil, doc)
	if err != nil {
		return Result{}, fmt.Errorf("%w: the inputs of batch %s cannot be written as JSON: %v", ErrBadRequest, req.Task, err)
	}
	env := appendClaimEnv([]string{"SOLAR_RESOURCE=", "SOLAR_ACTION=" + req.Action, "SOLAR_TASK=" + req.Task, "SOLAR_LOCATION=" + req.Location}, req)
	host, err := s.open(ctx, req.Location)
	if err != nil {
		return Result{}, err
	}
	defer host.Close()
	if bh, ok := host.(BatchHost); !ok || !bh.Batches() {
		return Result{}, ErrNoBatch
	}
	a := attemptOf(req, s.TempDir, s.KillGrace)
	a.Env, a.Inputs, a.Batch = env, raw, true
	return runAttempt(ctx, req, job{host: host, attempt: a, read: func(e Ended) outcome { return batchOutcome(e, seen) }})
}

// batchResultFile is the JSON a batch script may write to $SOLAR_RESULT.
type batchResultFile struct {
	Members map[string]batchMemberResult `json:"members"`
}

type batchMemberResult struct {
	Changed *bool          `json:"changed"`
	Failed  bool           `json:"failed"`
	Error   string         `json:"error"`
	Outputs map[string]any `json:"outputs"`
}

// batchOutcome reads a batch's result file: the members it names, which
// must be among members. No file, or an empty one, names none.
func batchOutcome(e Ended, members map[string]bool) outcome {
	o := outcome{err: e.ResultErr}
	if o.err != nil || len(bytes.TrimSpace(e.Result)) == 0 {
		return o
	}
	o.members, o.err = parseBatchResult(e.Result, members)
	return o
}

// parseBatchResult decodes a batch's result file. Its errors never quote
// the file, which may hold secrets; they may name a resource.
func parseBatchResult(raw []byte, members map[string]bool) (map[string]MemberResult, error) {
	var rf batchResultFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil {
		return nil, batchJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("result file holds more than one JSON value")
	}
	names := make([]string, 0, len(rf.Members))
	for name := range rf.Members {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]MemberResult, len(rf.Members))
	for _, name := range names {
		if !members[name] {
			return nil, fmt.Errorf("result file of the batch names %q, which is not one of its members", name)
		}
		m := rf.Members[name]
		r := MemberResult{Changed: m.Changed == nil || *m.Changed, Failed: m.Failed, Outputs: m.Outputs}
		if m.Failed {
			r.Error = strings.TrimSpace(m.Error)
			if r.Error == "" {
				r.Error = "the batch script reported it failed"
			}
		}
		for k, v := range r.Outputs {
			cv, err := canonicalNumbers(v)
			if err != nil {
				return nil, fmt.Errorf("result file: member %s: output %q: %w", name, k, err)
			}
			r.Outputs[k] = cv
		}
		out[name] = r
	}
	return out, nil
}

// batchJSONError says what is wrong with a batch's result file without
// quoting it (describeJSONError).
func batchJSONError(err error) error {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ):
		return fmt.Errorf("result file of the batch: %s is a JSON %s; want {\"members\": {RESOURCE: {changed, failed, error, outputs}}}", cmp.Or(typ.Field, "the file"), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("result file of the batch has %s; want {\"members\": {RESOURCE: {changed, failed, error, outputs}}}", strings.TrimPrefix(err.Error(), "json: "))
	}
	return describeJSONError(err)
}

// batchSecrets is the masker of a batch: every member's sensitive inputs,
// and the outputs results gives a member under the name of one of them.
func batchSecrets(members []Member, results map[string]MemberResult) *masker {
	m := &masker{}
	for _, mem := range members {
		m.addSensitive(mem.Sensitive, mem.Inputs, results[mem.Resource].Outputs)
	}
	m.build()
	return m
}

// usableMembers returns the members' results of a batch that ran to its
// end on a host that did not fail it, their errors masked with m; nil
// otherwise, and for an attempt that is not a batch.
func (o outcome) usableMembers(e Ended, hostErr error, m *masker) map[string]MemberResult {
	if o.members == nil || o.err != nil || e.Stopped || hostErr != nil {
		return nil
	}
	out := make(map[string]MemberResult, len(o.members))
	for name, r := range o.members {
		r.Error = m.apply(r.Error)
		out[name] = r
	}
	return out
}
