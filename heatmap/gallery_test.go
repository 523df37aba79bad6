package heatmap

import (
	"errors"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// galleryMaps are three maps with clearly different mean entropies: sharp, middling and uniform.
func galleryMaps() []*Map {
	sharp := testMap()
	for t, row := range sharp.Weights {
		for i := range row {
			row[i] = 0
		}
		row[t%len(row)] = 1
	}
	sharp.Forced, sharp.ModelOutput = true, []string{"a", "woman", "rides"}
	sharp.LogProbs = []float64{-0.5, -1, -0.25, -2, -0.25}
	middle := testMap()
	middle.Reference = []string{"a", "girl", "rides", "across"}
	middle.Line = 17
	uniform := testMap()
	for _, row := range uniform.Weights {
		for i := range row {
			row[i] = 1 / float32(len(row))
		}
	}
	return []*Map{middle, uniform, sharp} // entropies: middle, highest, 0
}

var linkPattern = regexp.MustCompile(`(?:src|href)="([^"#]+)"`)

func TestGalleryLinksResolve(t *testing.T) {
	dir := t.TempDir()
	maps := galleryMaps()
	if err := WriteGalleryDir(dir, "test gallery", maps, nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	links := linkPattern.FindAllStringSubmatch(string(page), -1)
	images := 0
	for _, l := range links {
		target := filepath.Join(dir, filepath.FromSlash(html.UnescapeString(l[1])))
		f, err := os.Open(target)
		if err != nil {
			t.Errorf("link %q does not resolve: %v", l[1], err)
			continue
		}
		if strings.HasSuffix(target, ".png") {
			if _, err := png.Decode(f); err != nil {
				t.Errorf("%s: %v", l[1], err)
			}
			images++
		}
		f.Close()
	}
	// Each picture is linked twice: the image and the link around it.
	if images != 2*len(maps) {
		t.Errorf("%d image links for %d sentences", images, len(maps))
	}
	for _, want := range []string{"a girl rides across", "ein mädchen fährt à přes", "1.609", "a woman rides", "-4.00", "input line 17"} {
		if !strings.Contains(string(page), html.EscapeString(want)) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

func TestWriteFileRejectsUnknownExtension(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "a.gif"), testMap())
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "a.gif") {
		t.Errorf("error %v, want ErrFormat naming a.gif", err)
	}
}

// TestGalleryInHeadlessChromium opens the gallery from the file system in Debian's chromium: the page sorted
// by entropy (its #entropy-desc address) must list the sentences from the most to the least spread attention,
// and a screenshot must show more than a blank page. It is skipped where chromium is not installed.
func TestGalleryInHeadlessChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	dir := t.TempDir()
	if err := WriteGalleryDir(dir, "test gallery", galleryMaps(), nil); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.ToSlash(filepath.Join(dir, "index.html"))
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir()}
	dom, err := exec.Command(browser, append(flags, "--dump-dom", url+"#entropy-desc")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	order := regexp.MustCompile(`class="entry" id="(s\d+)"`).FindAllStringSubmatch(string(dom), -1)
	var ids []string
	for _, m := range order {
		ids = append(ids, m[1])
	}
	// Entropies: s2 uniform (highest), s1 middling, s3 sharp (0).
	if strings.Join(ids, " ") != "s2 s1 s3" {
		t.Errorf("sorted by entropy, highest first, the page lists %v, want [s2 s1 s3]", ids)
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	if out, err := exec.Command(browser, append(flags, "--screenshot="+shot, "--window-size=1200,900", url)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The heat maps' orange and red cells: text and links, all a page without its images would show, are grey,
	// black or blue.
	warm := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r > 0xc000 && g > 0x3000 && g < 0xd000 && bl < 0x6000 {
				warm++
			}
		}
	}
	if warm < 1000 {
		t.Errorf("screenshot has %d orange or red pixels: the heat maps did not render", warm)
	}
	if os.Getenv("ATTEND_KEEP_SCREENSHOT") != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(os.Getenv("ATTEND_KEEP_SCREENSHOT"), data, 0o644)
	}
}
