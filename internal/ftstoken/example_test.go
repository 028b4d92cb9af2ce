package ftstoken_test

import (
	"fmt"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

func ExampleTokens() {
	fmt.Printf("%q\n", ftstoken.Tokens("Caroline's generalizations: COVID-19, café, naïve"))
	// Output: ["carolin" "s" "gener" "covid" "19" "cafe" "naiv"]
}

// A scorer counts a term's occurrences and the document's length with a
// reused Tokenizer, without allocating.
func ExampleTokenizer_Tokenize() {
	var tok ftstoken.Tokenizer
	tf, length := 0, 0
	tok.Tokenize("Running dogs run; the runner ran.", func(token []byte, pos int) {
		if string(token) == "run" {
			tf++
		}
		length = pos + 1
	})
	fmt.Println(tf, length)
	// Output: 2 6
}
