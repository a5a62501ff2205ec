package sdk

// Compressed encodes b with a content coding (gzip, zlib, flate, br) for
// the tests of package sdk_test.
var Compressed = compressed
