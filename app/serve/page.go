package serve

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// pageFiles are the pages: plain HTML, CSS and JavaScript, no framework and no build step, compiled into the
// binary; they load nothing from the network. shared.js holds what both pages share.
//
//go:embed page/index.html page/page.js page/watch.html page/watch.js page/page.css page/shared.js
var pageFiles embed.FS

// pageHandler serves the pages and their files, with a content security policy that lets them reach only this
// server: the translation page at / (translate), the watch page at /watch (watch; / leads there without the
// translation page).
func pageHandler(translate, watch bool) http.Handler {
	sub, err := fs.Sub(pageFiles, "page")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := map[string]string{"/page.css": "page.css", "/shared.js": "shared.js"}
	pages := []string{}
	if translate {
		files["/"], files["/page.js"] = "index.html", "page.js"
		pages = append(pages, "/ for the translation page")
	}
	if watch {
		files["/watch"], files["/watch.js"] = "watch.html", "watch.js"
		pages = append(pages, "/watch for the watch page")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := files[r.URL.Path]
		switch {
		case r.URL.Path == "/" && !translate && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, "/watch", http.StatusFound)
			return
		case !ok:
			writeError(w, errorf(http.StatusNotFound, "no page %s; open %s, or use the API under /v1/", r.URL.Path, strings.Join(pages, ", ")))
			return
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, errorf(http.StatusMethodNotAllowed, "the page takes GET, not %s", r.Method))
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, name)
	})
}
