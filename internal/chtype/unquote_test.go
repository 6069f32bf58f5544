package chtype

import (
	"encoding/json"
	"testing"
)

func TestAppendUnquote(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`""`, "", true},
		{`"plain"`, "plain", true},
		{`"ünï 日本"`, "ünï 日本", true},
		{`"a\"b\\c\/d"`, `a"b\c/d`, true},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t", true},
		{`"\u00e9\u00E9"`, "éé", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ud83d"`, "\uFFFD", true},
		{`"\ud83dx"`, "\uFFFDx", true},
		{`"\ud83d\u0041"`, "\uFFFDA", true},
		{`"\ude00\ud83d"`, "\uFFFD\uFFFD", true},
		{"\"\xff\"", "\uFFFD", true},
		{"\"a\xc3\"", "a\uFFFD", true},
		{`"\x"`, "", false},
		{`"\'"`, "", false},
		{`"\u12"`, "", false},
		{`"\u12g4"`, "", false},
		{`"\ud83d\u12"`, "", false},
		{`"a\"`, "", false},
		{`"a"b"`, "", false},
		{"\"\n\"", "", false},
		{`"`, "", false},
		{`abc`, "", false},
	}
	for _, c := range cases {
		got, ok := AppendUnquote([]byte("pre:"), []byte(c.in))
		want := "pre:" + c.want
		if !c.ok {
			want = "pre:"
		}
		if ok != c.ok || string(got) != want {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", c.in, got, ok, want, c.ok)
		}
	}
}

// FuzzAppendUnquote holds AppendUnquote to encoding/json's decoding of strings.
func FuzzAppendUnquote(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\n"`, `"\ud83d\ude00"`, `"\ud83d"`, "\"\xff\"", `"\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := AppendUnquote(nil, raw)
		if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
			if ok {
				t.Fatalf("%q accepted", raw)
			}
			return
		}
		var want string
		err := json.Unmarshal(raw, &want)
		if ok != (err == nil) || ok && string(got) != want {
			t.Fatalf("%q: got (%q, %v), encoding/json (%q, %v)", raw, got, ok, want, err)
		}
	})
}
