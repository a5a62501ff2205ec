package classifiers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aishield/aishield/classifiers"
)

func ExampleScanner_ScanString() {
	s, err := classifiers.New(classifiers.Options{HashKey: []byte("example key")})
	if err != nil {
		panic(err)
	}
	text := "CONFIDENTIAL\nContact: camille.martin@acme-rh.fr, +33 6 12 34 56 78\nSSN 536-22-1234"
	fs, err := s.ScanString(context.Background(), text)
	if err != nil {
		panic(err)
	}
	for _, f := range fs {
		fmt.Printf("%d:%d %s %s\n", f.Line, f.Column, f.Detector, f.Preview)
	}
	// Output:
	// 1:1 marker.classification CONFIDENTIAL
	// 2:10 pii.email c***@a***.fr
	// 2:37 pii.phone +3* * ** ** ** *8
	// 3:5 pii.us_ssn 5**-**-***4
}

func ExampleCustomRule() {
	s, err := classifiers.New(classifiers.Options{
		Detectors: []string{"marker.*"}, // built-ins: markers only
		Custom: []classifiers.CustomRule{
			{ID: "custom.project_apollo", Keywords: []string{"Project Apollo"}, ContextWords: []string{"codename", "nom de code"}},
			{ID: "custom.contract", Pattern: `(?<=contract )(?<value>CT-\d{6})(?!\d)`, Confidence: 0.9},
		},
	})
	if err != nil {
		panic(err)
	}
	text := "Nom de code : project apollo, contract CT-104233."
	fs, _ := s.ScanString(context.Background(), text)
	for _, f := range fs {
		fmt.Printf("%s %q %.2f\n", f.Detector, text[f.Start:f.End], f.Confidence)
	}
	// Output:
	// custom.project_apollo "project apollo" 0.90
	// custom.contract "CT-104233" 0.90
}

func ExampleTimeoutError() {
	s, err := classifiers.New(classifiers.Options{
		MatchTimeout: 20 * time.Millisecond,
		Custom:       []classifiers.CustomRule{{ID: "custom.redos", Pattern: `(a+)+$`}},
	})
	if err != nil {
		panic(err)
	}
	_, err = s.ScanString(context.Background(), strings.Repeat("a", 5000)+"b")
	var te *classifiers.TimeoutError
	fmt.Println(errors.As(err, &te), te.Rule)
	// Output: true custom.redos
}
