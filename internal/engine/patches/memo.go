package patches

import (
	"encoding/json"
	"strings"
	"text/template"
	"text/template/parse"
)

// A class's templates read a few variables each, and the same template is
// rendered for every MachineDeployment, often with the same values. The
// renderer keys a template's output by the values it reads, so it runs once
// per distinct input instead of once per target.

// templateReads lists the variable paths a template reads from dot, e.g.
// builtin.machineDeployment.version. ok is false when it reads dot in a way
// that cannot be listed (dot itself, range, with, nested templates): such a
// template is always executed.
func templateReads(t *template.Template) (reads [][]string, ok bool) {
	if t.Tree == nil || t.Root == nil {
		return nil, false
	}
	ok = true
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		if !ok || n == nil {
			return
		}
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			reads = append(reads, n.Ident)
		case *parse.VariableNode:
			if n.Ident[0] == "$" {
				if len(n.Ident) == 1 {
					ok = false // the whole of dot
					return
				}
				reads = append(reads, n.Ident[1:])
			}
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TextNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode,
			*parse.IdentifierNode, *parse.CommentNode, *parse.BreakNode, *parse.ContinueNode:
		default: // dot, range, with, template, chains: dot is read whole or changes
			ok = false
		}
	}
	walk(t.Root)
	return reads, ok
}

// readsEntry is what a template reads, as templateReads found it.
type readsEntry struct {
	paths [][]string
	ok    bool
}

// inputKey renders the template text and the values it reads as one string;
// ok is false when the template cannot be keyed.
func inputKey(text string, e readsEntry, vars map[string]any) (string, bool) {
	if !e.ok {
		return "", false
	}
	var b strings.Builder
	b.WriteString(text)
	for _, p := range e.paths {
		b.WriteByte(0)
		var cur any = vars
		for _, seg := range p {
			m, isMap := cur.(map[string]any)
			if !isMap {
				cur = nil
				b.WriteString("!") // not an object: the template errors alike
				break
			}
			v, found := m[seg]
			if !found {
				cur = nil
				b.WriteString("?") // missing: "<no value>" alike
				break
			}
			cur = v
		}
		if s, isString := cur.(string); isString {
			b.WriteString("s" + s)
			continue
		}
		raw, err := json.Marshal(cur)
		if err != nil {
			return "", false
		}
		b.Write(raw)
	}
	return b.String(), true
}
