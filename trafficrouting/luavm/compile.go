package luavm

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

const (
	defaultCacheSize = 128
	chunkName        = "script"
)

// protoCache holds compiled scripts by their source. Protos are read-only once compiled, so states on
// different goroutines share them. Keying by the source rather than a digest costs no copy and no hashing
// pass per call; the sources kept are bounded like the protos, which are about as large.
type protoCache struct {
	mu       sync.Mutex
	max      int
	protos   map[string]*lua.FunctionProto
	compiles atomic.Int64 // compilations done, for tests
}

func newProtoCache(max int) *protoCache {
	return &protoCache{max: max, protos: map[string]*lua.FunctionProto{}}
}

// compile returns the cached proto of script, compiling it on a miss. Two callers missing at once may both
// compile; the result is the same.
func (c *protoCache) compile(script string) (*lua.FunctionProto, error) {
	if proto := c.get(script); proto != nil {
		return proto, nil
	}
	proto, err := compileScript(script)
	if err != nil {
		return nil, err
	}
	c.compiles.Add(1)
	c.put(script, proto)
	return proto, nil
}

func (c *protoCache) get(key string) *lua.FunctionProto {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.protos[key]
}

// put stores proto, first dropping an arbitrary entry when full: scripts are few, so the bound only matters
// against a stream of distinct ones.
func (c *protoCache) put(key string, proto *lua.FunctionProto) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.protos) >= c.max {
		for k := range c.protos {
			delete(c.protos, k)
			break
		}
	}
	c.protos[key] = proto
}

// compileScript parses script, routes its concatenations through the size guard and compiles it.
func compileScript(script string) (*lua.FunctionProto, error) {
	if len(script) > maxScriptBytes {
		return nil, fmt.Errorf("%w: the script has %d bytes, more than the %d allowed", ErrScript, len(script),
			maxScriptBytes)
	}
	chunk, err := parse.Parse(strings.NewReader(script), chunkName)
	if err != nil {
		// The parser's messages end in a newline.
		return nil, fmt.Errorf("%w: %s", ErrScript, strings.TrimSpace(err.Error()))
	}
	chunk, err = guardChunk(chunk)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScript, err)
	}
	proto, err := lua.Compile(chunk, chunkName)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScript, err)
	}
	hintEmptyTables(proto)
	return proto, nil
}

// Instruction layout of Lua 5.1, which gopher-lua keeps: opcode in the top 6 bits, B in the low 9, C in the
// 9 above them.
const (
	opcodeShift = 26
	argBMask    = 0x1ff
	argCShift   = 9
	argCMask    = 0x1ff << argCShift
)

// hintEmptyTables gives every empty constructor `{}` in p and its nested functions a hash-size hint of one.
// gopher-lua makes the hash part of a table created without a hint with room for 32 keys on its first string
// key (over 2 KiB); with a hint of one it starts small and grows as keys come. NEWTABLE's B and C only size
// the table, so nothing a script can observe changes.
func hintEmptyTables(p *lua.FunctionProto) {
	for i, inst := range p.Code {
		if int(inst>>opcodeShift) == lua.OP_NEWTABLE && inst&(argBMask|argCMask) == 0 {
			p.Code[i] = inst | 1<<argCShift
		}
	}
	for _, nested := range p.FunctionPrototypes {
		hintEmptyTables(nested)
	}
}
