package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// consolePaths are requests to every kind of console route, assets included.
var consolePaths = []struct{ method, path string }{
	{http.MethodGet, "/console"},
	{http.MethodGet, "/console/"},
	{http.MethodGet, "/console/app.js"},
	{http.MethodGet, "/console/app.css"},
	{http.MethodGet, "/console/index.html"},
	{http.MethodGet, "/console/api/session"},
	{http.MethodGet, "/console/api/stats"},
	{http.MethodGet, "/console/api/tables?tenant=acme"},
	{http.MethodGet, "/console/api/tables/events?tenant=acme"},
	{http.MethodGet, "/console/api/stream/events?tenant=acme"},
	{http.MethodPost, "/console/api/query?tenant=acme"},
	{http.MethodGet, "/console/api/dlq?tenant=acme"},
	{http.MethodGet, "/console/api/dlq/events?tenant=acme"},
	{http.MethodPost, "/console/api/dlq/events/replay?tenant=acme"},
	{http.MethodDelete, "/console/api/dlq/events?tenant=acme"},
	{http.MethodPost, "/console/logout"},
}

func TestConsole(t *testing.T) {
	g := startGateway(t)
	g.sql(t, "CREATE TABLE events (id String, n UInt32, CONSTRAINT small CHECK n < 1000) ENGINE = MergeTree() ORDER BY id")

	t.Run("refused without the operator credential", func(t *testing.T) {
		for _, c := range consolePaths {
			for _, tc := range []struct{ name, token string }{{"no credential", ""}, {"tenant key", g.Tenant}, {"wrong key", strings.Repeat("x", 48)}} {
				r := g.do(t, c.method, c.path, tc.token, "")
				if r.Status != http.StatusUnauthorized && r.Status != http.StatusForbidden {
					t.Errorf("%s %s with %s: %d %.80q, want 401 or 403", c.method, c.path, tc.name, r.Status, r.Body)
				}
				if strings.Contains(string(r.Body), "whChart") || strings.Contains(string(r.Body), "view-overview") {
					t.Errorf("%s %s with %s served console content", c.method, c.path, tc.name)
				}
			}
		}
		// A navigation without the cookie gets the login form; the operator key as bearer works.
		if r := g.do(t, http.MethodGet, "/console/", "", "", "Accept", "text/html"); r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), `name="key"`) {
			t.Errorf("GET /console/ as a browser without a session: %s, want 401 and the login form", r)
		}
		if r := g.do(t, http.MethodGet, "/console/api/stats", g.Operator, ""); r.Status != http.StatusOK {
			t.Errorf("stats with the operator key: %s, want 200", r)
		}
		if r := g.do(t, http.MethodPost, "/console/login", "", "key=wrong", "Content-Type", "application/x-www-form-urlencoded"); r.Status != http.StatusUnauthorized {
			t.Errorf("login with a wrong key: %s, want 401", r)
		}
		// A session cookie alone does not change state without the console's CSRF header.
		login := g.do(t, http.MethodPost, "/console/login", "", "key="+g.Operator, "Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
		cookie := login.Header.Get("Set-Cookie")
		if login.Status != http.StatusOK || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
			t.Fatalf("login: %s (Set-Cookie %q), want 200 and an HttpOnly SameSite=Strict cookie", login, cookie)
		}
		session := strings.SplitN(cookie, ";", 2)[0]
		if r := g.do(t, http.MethodGet, "/console/api/stats", "", "", "Cookie", session); r.Status != http.StatusOK {
			t.Errorf("stats with the session cookie: %s, want 200", r)
		}
		if r := g.do(t, http.MethodDelete, "/console/api/dlq/events?tenant=acme", "", "", "Cookie", session); r.Status != http.StatusForbidden || r.Code() != "auth.console_csrf" {
			t.Errorf("purge with the cookie and no CSRF header: %s, want 403 auth.console_csrf", r)
		}
		if r := g.do(t, http.MethodGet, "/console/api/stats", "", "", "Cookie", session+"0"); r.Status != http.StatusUnauthorized {
			t.Errorf("stats with a tampered cookie: %s, want 401", r)
		}
	})

	ctx := browser(t)
	if ctx == nil {
		return
	}
	run(t, ctx, "log in", chromedp.Navigate(g.client.Base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), g.Operator),
		chromedp.Submit(chromedp.CSS("#key")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))

	t.Run("overview counters move and the tail shows the row", func(t *testing.T) {
		run(t, ctx, "overview", chromedp.Navigate(g.client.Base+"/console/#overview"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		poll.Until(t, 20*time.Second, "the overview's first numbers", func() bool { return text(ctx, "#total-accepted") != "–" })
		before, _ := strconv.ParseFloat(text(ctx, "#total-accepted"), 64)
		g.ingest(t, "events", `{"id":"a","n":1}`+"\n"+`{"id":"b","n":2}`+"\n"+`{"id":"c","n":3}`)
		poll.Until(t, 20*time.Second, "rows accepted to move by 3 on the overview", func() bool {
			v, err := strconv.ParseFloat(text(ctx, "#total-accepted"), 64)
			return err == nil && v >= before+3
		})
		poll.Until(t, 20*time.Second, "rows inserted on the overview", func() bool {
			v, err := strconv.ParseFloat(text(ctx, "#total-inserted"), 64)
			return err == nil && v >= 3
		})
		if os.Getenv("WH_CONSOLE_SCREENSHOTS") != "" {
			// For the picture: a few more seconds of traffic, so the charts have a history.
			sent := before + 3
			for i := range 8 {
				var rows []string
				for j := range 10 * (i + 1) {
					rows = append(rows, fmt.Sprintf(`{"id":"shot-%d-%d","n":%d}`, i, j, j))
				}
				g.ingest(t, "events", strings.Join(rows, "\n"))
				for range 2 { // a miss, then a hit: the insert before invalidated the tenant's results
					g.do(t, http.MethodPost, "/v1/query", g.Tenant, fmt.Sprintf(`{"sql":"SELECT count() FROM events WHERE n >= %d"}`, i%3))
				}
				sent += float64(len(rows))
				poll.Until(t, 20*time.Second, "the overview to show the batch", func() bool {
					v, err := strconv.ParseFloat(text(ctx, "#total-accepted"), 64)
					return err == nil && v >= sent
				})
			}
		}
		screenshot(t, ctx, "overview")

		run(t, ctx, "tables", chromedp.Navigate(g.client.Base+"/console/#tables"))
		poll.Until(t, 20*time.Second, "the events table with its parts", func() bool {
			return text(ctx, `#tables-grid tr[data-table="events"] .parts`) != "" && text(ctx, `#tables-grid tr[data-table="events"] .parts`) != "0"
		})
		screenshot(t, ctx, "tables")

		run(t, ctx, "start the tail", chromedp.Navigate(g.client.Base+"/console/#tail"))
		poll.Until(t, 20*time.Second, "events in the tail's table list", func() bool {
			return strings.Contains(text(ctx, "#tail-table"), "events")
		})
		run(t, ctx, "start the tail", chromedp.SetValue(chromedp.CSS("#tail-table"), "events"), chromedp.Click(chromedp.CSS("#tail-start")))
		poll.Until(t, 20*time.Second, "the tail to be live", func() bool { return strings.HasPrefix(text(ctx, "#tail-status"), "Live") })
		g.ingest(t, "events", `{"id":"tail-1","n":7}`)
		poll.Until(t, 20*time.Second, "the row in the tail", func() bool { return strings.Contains(text(ctx, "#tail-rows"), "tail-1") })

		// Paused, rows that arrive are not shown; resumed from the last id, they are, once.
		run(t, ctx, "pause", chromedp.Click(chromedp.CSS("#tail-pause")))
		g.ingest(t, "events", `{"id":"tail-2","n":8}`)
		if strings.Contains(text(ctx, "#tail-rows"), "tail-2") {
			t.Fatal("a paused tail showed a new row")
		}
		run(t, ctx, "resume", chromedp.Click(chromedp.CSS("#tail-resume")))
		poll.Until(t, 20*time.Second, "the row sent while paused, after resuming", func() bool { return strings.Contains(text(ctx, "#tail-rows"), "tail-2") })
		if n := strings.Count(text(ctx, "#tail-rows"), "tail-1"); n != 1 {
			t.Fatalf("tail-1 shown %d times after resuming from the last id, want once", n)
		}
		screenshot(t, ctx, "tail")
	})

	t.Run("a bad row shows in the dead letters and lands after the fix and a replay", func(t *testing.T) {
		g.do(t, http.MethodPost, "/v1/ingest/events", g.Tenant, `{"id":"big","n":5000}`, "Content-Type", "application/x-ndjson")
		run(t, ctx, "dead letters", chromedp.Navigate(g.client.Base+"/console/#dlq"))
		poll.Until(t, 60*time.Second, "events in the dead-letter view", func() bool {
			if !strings.Contains(text(ctx, "#dlq-tables"), "events") {
				run(t, ctx, "reload", chromedp.Reload())
				return false
			}
			return true
		})
		run(t, ctx, "open the entries", chromedp.Click(chromedp.CSS(`#dlq-tables tr[data-table="events"] button`)))
		poll.Until(t, 20*time.Second, "the entry's reason", func() bool {
			return strings.Contains(strings.ToLower(text(ctx, "#dlq-entries")), "constraint")
		})
		run(t, ctx, "inspect", chromedp.Click(chromedp.CSS(`#dlq-entries button`)))
		poll.Until(t, 10*time.Second, "the inspected record", func() bool { return strings.Contains(text(ctx, "#dlq-inspect"), `big`) })
		screenshot(t, ctx, "dead-letters")

		g.sql(t, "ALTER TABLE events DROP CONSTRAINT small")
		run(t, ctx, "dry run", chromedp.Click(chromedp.CSS("#dlq-dry")))
		poll.Until(t, 20*time.Second, "the dry run's report", func() bool { return strings.Contains(text(ctx, "#dlq-report"), "Dry run: 1 entries") })
		run(t, ctx, "replay", chromedp.Click(chromedp.CSS("#dlq-replay")), chromedp.WaitVisible(chromedp.CSS("#confirm-ok")), chromedp.Click(chromedp.CSS("#confirm-ok")))
		poll.Until(t, 20*time.Second, "the replay's report", func() bool { return strings.Contains(text(ctx, "#dlq-report"), "1 replayed") })
		poll.Until(t, 60*time.Second, "the replayed row in the table", func() bool {
			r := g.do(t, http.MethodPost, "/v1/query", g.Tenant, `{"sql":"SELECT id, n FROM events WHERE id = 'big'"}`, "Cache-Control", "no-cache")
			return r.OK() && strings.Contains(string(r.Body), `"big"`) && strings.Contains(string(r.Body), `5000`)
		})
	})

	t.Run("a query returns rows and says HIT when repeated", func(t *testing.T) {
		run(t, ctx, "query", chromedp.Navigate(g.client.Base+"/console/#query"),
			chromedp.WaitVisible(chromedp.CSS("#query-sql")),
			chromedp.SetValue(chromedp.CSS("#query-sql"), "SELECT id, n FROM events WHERE n >= {min:UInt32} AND id NOT LIKE 'shot-%' ORDER BY id"),
			chromedp.SetValue(chromedp.CSS("#query-params"), `{"min": 2}`),
			chromedp.Click(chromedp.CSS("#query-run")))
		poll.Until(t, 20*time.Second, "the first answer", func() bool { return text(ctx, "#query-cache") == "MISS" })
		want := g.do(t, http.MethodPost, "/v1/query", g.Tenant, `{"sql":"SELECT toString(count()) AS c FROM events WHERE n >= 2 AND id NOT LIKE 'shot-%'"}`, "Cache-Control", "no-cache")
		rows := text(ctx, "#query-rows")
		if got := text(ctx, "#query-grid"); !strings.Contains(got, "tail-1") || !strings.Contains(string(want.Body), `"c":"`+rows+`"`) {
			t.Fatalf("the grid shows %s rows %q; the same query over /v1/query: %s", rows, got, want)
		}
		run(t, ctx, "repeat", chromedp.Click(chromedp.CSS("#query-run")))
		poll.Until(t, 20*time.Second, "HIT on the repeat", func() bool { return text(ctx, "#query-cache") == "HIT" })
		if got := text(ctx, "#query-rows"); got != rows {
			t.Fatalf("the cached answer has %s rows, the first %s", got, rows)
		}
		if !strings.Contains(text(ctx, "#query-elapsed"), "ms") {
			t.Fatalf("elapsed %q, want milliseconds", text(ctx, "#query-elapsed"))
		}
		screenshot(t, ctx, "query")
	})

	t.Run("the views are reachable with the keyboard", func(t *testing.T) {
		run(t, ctx, "overview", chromedp.Navigate(g.client.Base+"/console/#overview"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
		for _, view := range []string{"tables", "tail", "dlq", "query", "overview"} {
			run(t, ctx, "focus "+view, chromedp.Focus(chromedp.CSS(`nav a[data-view="`+view+`"]`)), chromedp.KeyEvent("\r"))
			poll.Until(t, 10*time.Second, "the "+view+" view after Enter on its link", func() bool {
				c, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				visible, err := chromedp.Run(c, chromedp.Evaluate[bool](`!document.getElementById("view-`+view+`").hidden && document.querySelector('nav a[aria-current="page"]').dataset.view === "`+view+`"`))
				return err == nil && visible
			})
		}
	})

	t.Run("every view fits a phone's width", func(t *testing.T) {
		run(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844))
		defer run(t, ctx, "reset viewport", chromedp.EmulateReset())
		for _, view := range []string{"overview", "tables", "tail", "dlq", "query"} {
			run(t, ctx, view, chromedp.Navigate(g.client.Base+"/console/#"+view), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			overflow, err := chromedp.Run(c, chromedp.Evaluate[float64](`document.documentElement.scrollWidth - window.innerWidth`))
			cancel()
			if err != nil || overflow > 0 {
				t.Errorf("view %s at 390 px: the page is %v px wider than the screen (%v)", view, overflow, err)
			}
			if view == "overview" {
				screenshot(t, ctx, "overview-phone")
			}
		}
	})

	t.Run("a store that is down is named in each view", func(t *testing.T) {
		run(t, ctx, "pick offline", chromedp.Navigate(g.client.Base+"/console/#tables"),
			chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
			chromedp.SetValue(chromedp.CSS("#tenant"), "offline"),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("tenant").dispatchEvent(new Event("change"))`))
		poll.Until(t, 30*time.Second, "the tables view to name the store", func() bool {
			return strings.Contains(text(ctx, "#tables-status"), "store is unavailable")
		})
		run(t, ctx, "query offline", chromedp.Navigate(g.client.Base+"/console/#query"),
			chromedp.WaitVisible(chromedp.CSS("#query-sql")),
			chromedp.SetValue(chromedp.CSS("#query-sql"), "SELECT 1 FROM t"),
			chromedp.Click(chromedp.CSS("#query-run")))
		poll.Until(t, 30*time.Second, "the query view to say the store is down", func() bool {
			return strings.Contains(text(ctx, "#query-status"), "store.unavailable")
		})
		run(t, ctx, "dead letters of offline", chromedp.Navigate(g.client.Base+"/console/#dlq"))
		poll.Until(t, 20*time.Second, "the dead-letter view, whose queue is up", func() bool {
			return text(ctx, "#dlq-status") == "No dead letters."
		})
		// Back to acme for whoever runs next.
		run(t, ctx, "pick acme", chromedp.SetValue(chromedp.CSS("#tenant"), "acme"),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("tenant").dispatchEvent(new Event("change"))`))
	})
}
