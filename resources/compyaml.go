package resources

import (
	"bytes"
	"runtime"
	"sync"

	"gopkg.in/yaml.v3"
)

// minSplit is the number of entries under which a composition is parsed
// whole: parsing in parts pays for itself only on big ones (yaml.v3 parses
// about 100,000 entries a second, one core at a time).
const minSplit = 2000

// parseComposition decodes the composition document raw. A big one is
// parsed in parts side by side (see split); any other document, and one
// whose parts do not all parse, is parsed whole, so that what it decodes to
// (comments aside, which may attach to other nodes around a cut and which
// nothing reads) and the errors it reports are always yaml.v3's.
func parseComposition(raw []byte) (compFile, error) {
	if parts, shifts, ok := split(raw, runtime.GOMAXPROCS(0), minSplit); ok {
		if f, ok := parseParts(parts, shifts); ok {
			return f, nil
		}
	}
	var f compFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	err := dec.Decode(&f)
	return f, err
}

// split cuts a composition of this plain shape, with at least min entries,
//
//	resources:
//	  - id: ...
//	    ...
//	events:
//	  - ...
//
// into n documents of the same shape: "resources:" and a run of its
// entries, the last one with the events. Parsed one by one, they give what
// the whole gives, because YAML ends an entry of a block sequence only at a
// line that starts with "- " at the sequence's indentation, and every other
// line of an entry is indented more. A cut that falls inside something that
// spans lines anyway (a quoted string, a flow collection) leaves two parts
// that do not parse, and so does an alias in one part of an anchor in
// another; the caller then parses the whole. A document of any other shape
// (other top-level keys, tabs, carriage returns, several documents) is not
// cut. shifts[i] is how many lines of raw come before part i's second line.
func split(raw []byte, n, min int) (parts [][]byte, shifts []int, ok bool) {
	if n < 2 || bytes.ContainsAny(raw, "\t\r") {
		return nil, nil, false
	}
	const (
		before = iota
		inResources
		inEvents
	)
	section, indent := before, -1
	var starts, lines []int // byte offset and line number of each entry
	for off, line := 0, 1; off < len(raw); line++ {
		end := bytes.IndexByte(raw[off:], '\n')
		if end < 0 {
			end = len(raw) - off
		}
		text := raw[off : off+end]
		sp := len(text) - len(bytes.TrimLeft(text, " "))
		switch {
		case sp == len(text) || text[sp] == '#':
			// Blank or a comment.
		case section == inResources && (indent < 0 || sp == indent) && isEntry(text[sp:]):
			indent = sp
			starts, lines = append(starts, off), append(lines, line)
		case sp == 0 && section == before && string(text) == "resources:":
			section = inResources
		case sp == 0 && section == inResources && string(text) == "events:":
			section = inEvents
		case sp == 0 || section == before || section == inResources && (indent < 0 || sp <= indent):
			// Anything else before the first entry, at or left of the
			// entries' indentation, or outside the two keys.
			return nil, nil, false
		}
		off += end + 1
	}
	if len(starts) < min || len(starts) < n {
		return nil, nil, false
	}
	for i := range n {
		first := i * len(starts) / n
		end := len(raw)
		if i < n-1 {
			end = starts[(i+1)*len(starts)/n]
		}
		part := append([]byte("resources:\n"), raw[starts[first]:end]...)
		parts, shifts = append(parts, part), append(shifts, lines[first]-2)
	}
	return parts, shifts, true
}

// isEntry reports whether a line, from its first non-blank, starts an entry
// of a block sequence.
func isEntry(text []byte) bool {
	return len(text) > 0 && text[0] == '-' && (len(text) == 1 || text[1] == ' ')
}

// parseParts parses the parts of a composition side by side and joins
// them, with the lines of the whole (shifts, see split). It reports false
// when a part does not parse.
func parseParts(parts [][]byte, shifts []int) (compFile, bool) {
	files := make([]compFile, len(parts))
	failed := make([]bool, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() {
			dec := yaml.NewDecoder(bytes.NewReader(parts[i]))
			dec.KnownFields(true)
			if dec.Decode(&files[i]) != nil {
				failed[i] = true
				return
			}
			for j := range files[i].Resources {
				shiftLines(&files[i].Resources[j], shifts[i])
			}
			for j := range files[i].Events {
				shiftLines(&files[i].Events[j], shifts[i])
			}
		})
	}
	wg.Wait()
	var f compFile
	for i := range files {
		if failed[i] {
			return compFile{}, false
		}
		f.Resources = append(f.Resources, files[i].Resources...)
		f.Events = append(f.Events, files[i].Events...)
	}
	return f, true
}

// shiftLines moves n and everything in it down by lines.
func shiftLines(n *yaml.Node, lines int) {
	n.Line += lines
	for _, c := range n.Content {
		shiftLines(c, lines)
	}
}
