package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	gosync "sync"
	"testing"
	"time"
)

// A small client of the Chrome DevTools protocol over the pipe Chromium
// opens with --remote-debugging-pipe (file descriptors 3 and 4, messages
// ended by a NUL byte): the standard library is enough, no websocket.

// chromium is a headless Chromium driven by the tests.
type chromium struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     *os.File // our end of its fd 3
	stderr *bytes.Buffer

	mu      gosync.Mutex
	nextID  int
	calls   map[int]chan cdpMessage
	waiters map[string][]chan cdpMessage // by session and event method
	closed  error
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// chromiumPath finds Debian's chromium; the test skips without it.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: install it (apt-get install chromium) to run the browser test")
	return ""
}

func startChromium(t *testing.T) *chromium {
	t.Helper()
	path := chromiumPath(t)
	toChrome, ourIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ourOut, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &chromium{t: t, in: ourIn, stderr: &bytes.Buffer{}, calls: map[int]chan cdpMessage{}, waiters: map[string][]chan cdpMessage{}}
	c.cmd = exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
		"--hide-scrollbars", "--window-size=1280,900", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	c.cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	fromChrome.Close()
	go c.read(ourOut)
	t.Cleanup(func() {
		c.in.Close()
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

func (c *chromium) read(out *os.File) {
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		b, err := r.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			c.closed = fmt.Errorf("chromium closed its pipe: %w", err)
			for _, ch := range c.calls {
				close(ch)
			}
			c.calls = map[int]chan cdpMessage{}
			c.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.calls[m.ID]; ok {
				delete(c.calls, m.ID)
				ch <- m
			}
		} else if key := m.SessionID + " " + m.Method; len(c.waiters[key]) > 0 {
			for _, ch := range c.waiters[key] {
				ch <- m
			}
			delete(c.waiters, key)
		}
		c.mu.Unlock()
	}
}

// cdpTimeout bounds each call and page load of the real browser, which no
// fake clock reaches. It only reports a hang: a page loads within a second
// or two on a busy machine.
const cdpTimeout = time.Minute

// call sends a command (to the browser when session is "") and decodes
// its result into out (nil: ignored).
func (c *chromium) call(session, method string, params, out any) error {
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return c.closed
	}
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMessage, 1)
	c.calls[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := c.in.Write(append(b, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		switch {
		case !ok:
			return fmt.Errorf("%s: chromium went away", method)
		case m.Error != nil:
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		case out != nil:
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-time.After(cdpTimeout):
		return fmt.Errorf("%s: no answer in %s", method, cdpTimeout)
	}
}

// expect returns a channel that receives the next event method of session.
func (c *chromium) expect(session, method string) <-chan cdpMessage {
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	key := session + " " + method
	c.waiters[key] = append(c.waiters[key], ch)
	c.mu.Unlock()
	return ch
}

// tab is one page of the browser.
type tab struct {
	c       *chromium
	t       *testing.T
	session string
}

func (c *chromium) newTab() *tab {
	c.t.Helper()
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		c.t.Fatal(err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call("", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		c.t.Fatal(err)
	}
	tb := &tab{c: c, t: c.t, session: attached.SessionID}
	if err := c.call(tb.session, "Page.enable", nil, nil); err != nil {
		c.t.Fatal(err)
	}
	return tb
}

// load runs act and waits for the page load it causes.
func (tb *tab) load(what string, act func() error) {
	tb.t.Helper()
	loaded := tb.c.expect(tb.session, "Page.loadEventFired")
	if err := act(); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	select {
	case <-loaded:
	case <-time.After(cdpTimeout):
		tb.t.Fatalf("%s: the page did not load in %s", what, cdpTimeout)
	}
}

func (tb *tab) navigate(url string) {
	tb.t.Helper()
	tb.load("open "+url, func() error {
		var r struct {
			ErrorText string `json:"errorText"`
		}
		if err := tb.c.call(tb.session, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
			return err
		}
		if r.ErrorText != "" {
			return errors.New(r.ErrorText)
		}
		return nil
	})
}

// eval evaluates a JavaScript expression in the page (DevTools' own
// evaluation: the page's CSP forbids any script of the page) and returns
// its value as JSON.
func (tb *tab) eval(expr string) json.RawMessage {
	tb.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := tb.c.call(tb.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		tb.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		tb.t.Fatalf("evaluate %s: %s", expr, r.ExceptionDetails.Text)
	}
	return r.Result.Value
}

// text returns the page's visible text.
func (tb *tab) text() string {
	tb.t.Helper()
	var s string
	if err := json.Unmarshal(tb.eval("document.body.innerText"), &s); err != nil {
		tb.t.Fatal(err)
	}
	return s
}

// click presses the element selector finds and waits for the page it
// loads.
func (tb *tab) click(selector string) {
	tb.t.Helper()
	sel, _ := json.Marshal(selector)
	tb.load("click "+selector, func() error {
		var ok bool
		if err := json.Unmarshal(tb.eval(fmt.Sprintf("(() => { const e = document.querySelector(%s); if (!e) return false; e.click(); return true })()", sel)), &ok); err != nil || !ok {
			return fmt.Errorf("no element matches %s", selector)
		}
		return nil
	})
}

// fill sets the value of the input selector finds.
func (tb *tab) fill(selector, value string) {
	tb.t.Helper()
	sel, _ := json.Marshal(selector)
	val, _ := json.Marshal(value)
	var ok bool
	if err := json.Unmarshal(tb.eval(fmt.Sprintf("(() => { const e = document.querySelector(%s); if (!e) return false; e.value = %s; return true })()", sel, val)), &ok); err != nil || !ok {
		tb.t.Fatalf("no input matches %s", selector)
	}
}

// screenshot saves the whole page as a PNG at path.
func (tb *tab) screenshot(path string) {
	tb.t.Helper()
	var m struct {
		CSSContentSize struct {
			Width  float64 `json:"width"`
			Height float64 `json:"height"`
		} `json:"cssContentSize"`
	}
	if err := tb.c.call(tb.session, "Page.getLayoutMetrics", nil, &m); err != nil {
		tb.t.Fatal(err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	clip := map[string]any{"x": 0, "y": 0, "width": max(m.CSSContentSize.Width, 1280), "height": min(max(m.CSSContentSize.Height, 600), 4000), "scale": 1}
	if err := tb.c.call(tb.session, "Page.captureScreenshot", map[string]any{"format": "png", "clip": clip, "captureBeyondViewport": true}, &shot); err != nil {
		tb.t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}
