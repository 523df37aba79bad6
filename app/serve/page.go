package serve

import (
	"embed"
	"io/fs"
	"net/http"
)

// pageFiles are the page: plain HTML, CSS and JavaScript, no framework and no build step, compiled into the
// binary; it loads nothing from the network.
//
//go:embed page/index.html page/page.css page/page.js
var pageFiles embed.FS

// pageHandler serves the page at / and its files, with a content security policy that lets it reach only
// this server.
func pageHandler() http.Handler {
	sub, err := fs.Sub(pageFiles, "page")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/", "/page.css", "/page.js":
		default:
			writeError(w, errorf(http.StatusNotFound, "no page %s; open / for the page, or use the API under /v1/", r.URL.Path))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, errorf(http.StatusMethodNotAllowed, "the page takes GET, not %s", r.Method))
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
