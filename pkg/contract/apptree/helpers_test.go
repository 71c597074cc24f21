package apptree

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func inflate(t testing.TB, raw []byte) string {
	r, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(data)
}

func deflate(t testing.TB, s string) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
