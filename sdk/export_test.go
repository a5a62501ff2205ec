package sdk

// Compressed encodes b with a content coding (gzip, zlib, flate, br) for
// the tests of package sdk_test.
var Compressed = compressed

// PromptCounts counts the prompt of x exactly, in the background as the
// Transport does when the request leaves and inline, and reports whether
// the background count was started.
func PromptCounts(x *Exchange) (ahead, inline int, started bool, err error) {
	x.countAhead()
	started = x.count != nil
	if inline, err = exactCount(x.g.eval, x.dest, x.prompt); err != nil {
		return 0, 0, started, err
	}
	ahead, err = x.exactPrompt()
	return ahead, inline, started, err
}
