package serve

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// hostPolicy says which names a request may give in its Host header: those the server listens as, and those
// --allowed-hosts adds. A web page that points its own name at the server's address (DNS rebinding) sends
// that name, which is refused, so the page cannot use the API through the visitor's browser.
type hostPolicy struct {
	names    map[string]bool // host names and IP addresses, lowercase, without a port
	loopback bool            // localhost names and loopback IP addresses
	anyIP    bool            // any IP address: the server listens on every interface
}

// newHostPolicy is the policy of a server listening on addr (host:port, as --addr; "" is a loopback address)
// that also answers to allowed (a comma-separated list of host names or IP addresses, each with or without a
// port, as --allowed-hosts). A loopback address answers to localhost, *.localhost and the loopback IP
// addresses; every interface (":PORT", "0.0.0.0:PORT", "[::]:PORT") to those and any IP address; another
// address to itself. Ports are not compared: a name is what a DNS rebinding page cannot fake.
func newHostPolicy(addr, allowed string) (*hostPolicy, error) {
	p := &hostPolicy{names: map[string]bool{}}
	host := ""
	if addr != "" {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("--addr %s: %w; want host:port such as 127.0.0.1:8080", addr, err)
		}
		host = h
	}
	switch {
	case host == "" && addr == "":
		p.loopback = true
	case everyInterface(addr):
		p.loopback, p.anyIP = true, true
	case isLoopback(hostName(host)):
		p.loopback = true
	default:
		p.names[hostName(host)] = true
	}
	items, err := splitList("--allowed-hosts", allowed)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		name := item
		if h, port, err := net.SplitHostPort(item); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("--allowed-hosts: %q has port %q; want a host name or an IP address, with a port from 1 to 65535 or none", item, port)
			}
			name = h
		}
		name = hostName(name)
		if !validHostName(name) {
			return nil, fmt.Errorf("--allowed-hosts: %q is not a host name or an IP address (such as translate.example.org or 192.0.2.7); give names separated by commas, without a scheme or a path", item)
		}
		p.names[name] = true
	}
	return p, nil
}

// allows reports whether a request's Host header (r.Host: a name or an IP address, perhaps with a port, IPv6
// in brackets) is one the server answers to.
func (p *hostPolicy) allows(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	name := hostName(host)
	if name == "" {
		return false
	}
	if p.names[name] || p.loopback && isLoopback(name) {
		return true
	}
	return p.anyIP && net.ParseIP(name) != nil
}

// refusal is the answer to a request whose Host header (r.Host) the policy does not allow.
func (p *hostPolicy) refusal(host string) *apiError {
	return errorf(http.StatusForbidden, "this server does not answer to the host %q; it answers to the names of the address it listens on, and to those --allowed-hosts gives (such as the name a proxy forwards)", host)
}

// hostName is a host as compared: lowercase, without IPv6 brackets or a final dot.
func hostName(host string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return strings.TrimSuffix(host, ".")
}

// isLoopback reports whether name (hostName) is always this machine: localhost, a name under .localhost (RFC
// 6761) or a loopback IP address.
func isLoopback(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// validHostName reports whether name (hostName) is an IP address or a DNS name: labels of letters, digits,
// hyphens and underscores separated by dots.
func validHostName(name string) bool {
	if net.ParseIP(name) != nil {
		return true
	}
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// everyInterface reports whether addr (host:port) listens on every network interface: no host, 0.0.0.0 or
// ::.
func everyInterface(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// splitList splits a comma-separated flag value into its items, trimmed; an empty item is an error.
func splitList(flag, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var items []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%s %q has an empty item; separate the items by single commas", flag, v)
		}
		items = append(items, item)
	}
	return items, nil
}

// corsPolicy is the origins --cors lets call the API from a browser: any ("*"), or a list.
type corsPolicy struct {
	any     bool
	origins []string // as browsers send them in Origin: scheme://host[:port], lowercase, no default port
}

// newCORSPolicy reads --cors: "" for none, "*" for any origin, or a comma-separated list of origins, each
// scheme://host[:port] with scheme http or https and no path, query or user ("null", the origin of sandboxed
// pages and local files, is refused: any page can send it).
func newCORSPolicy(v string) (*corsPolicy, error) {
	items, err := splitList("--cors", v)
	if err != nil {
		return nil, err
	}
	p := &corsPolicy{}
	for _, item := range items {
		if item == "*" {
			if len(items) > 1 {
				return nil, fmt.Errorf("--cors %q: * lets every origin in; give it alone, or list origins", v)
			}
			p.any = true
			continue
		}
		origin, err := parseOrigin(item)
		if err != nil {
			return nil, fmt.Errorf("--cors: %w", err)
		}
		p.origins = append(p.origins, origin)
	}
	return p, nil
}

// parseOrigin checks an origin and returns it as a browser sends it in Origin.
func parseOrigin(s string) (string, error) {
	if strings.EqualFold(s, "null") {
		return "", fmt.Errorf("origin %q is refused: sandboxed pages and local files send it, so it would let any of them in; give the origin of the page, such as https://example.org", s)
	}
	u, err := url.Parse(s)
	want := "; want scheme://host[:port] with scheme http or https, such as https://example.org or http://localhost:3000"
	switch {
	case err != nil:
		return "", fmt.Errorf("origin %q is not a URL%s", s, want)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("origin %q has no http or https scheme%s", s, want)
	case u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("origin %q has no host%s", s, want)
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return "", fmt.Errorf("origin %q has more than scheme, host and port (an origin has no user, path, query or fragment)%s", s, want)
	}
	host, port := hostName(u.Hostname()), u.Port()
	if !validHostName(host) {
		return "", fmt.Errorf("origin %q has host %q, which is not a host name or an IP address%s", s, u.Hostname(), want)
	}
	if strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("origin %q ends in a colon without a port%s", s, want)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("origin %q has port %q; want 1 to 65535%s", s, port, want)
		}
	}
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// allowOrigin is the Access-Control-Allow-Origin of a request from origin (its Origin header), or "" for
// none: "*" for any origin, the one origin listed whatever the request's (as a server of one origin answers),
// or the request's origin when it is one of several listed.
func (p *corsPolicy) allowOrigin(origin string) string {
	switch {
	case p.any:
		return "*"
	case len(p.origins) == 1:
		return p.origins[0]
	}
	for _, o := range p.origins {
		if strings.EqualFold(o, origin) {
			return o
		}
	}
	return ""
}

// enabled reports whether --cors was given.
func (p *corsPolicy) enabled() bool { return p.any || len(p.origins) > 0 }

// checkContentType refuses (415) a POST body that does not say it is JSON: Content-Type application/json,
// with parameters or none, and charset utf-8 if any. A web page can send other types (text/plain, forms) to
// any site without asking it first (a "simple" cross-site request); application/json it cannot.
func checkContentType(header string) *apiError {
	const want = "; send Content-Type: application/json (curl: -H 'Content-Type: application/json')"
	if header == "" {
		return errorf(http.StatusUnsupportedMediaType, "the request has no Content-Type%s", want)
	}
	media, params, err := mime.ParseMediaType(header)
	if err != nil {
		return errorf(http.StatusUnsupportedMediaType, "Content-Type %q does not parse: %v%s", header, err, want)
	}
	if media != "application/json" {
		return errorf(http.StatusUnsupportedMediaType, "Content-Type is %s, not application/json%s", media, want)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return errorf(http.StatusUnsupportedMediaType, "Content-Type application/json has charset %q; the body must be UTF-8 (charset=utf-8, or none)", cs)
	}
	return nil
}
