// Injected by firsttoken before the page's own scripts. It records, on the
// page's clock (performance.now()), the user's send action and when the
// answer element first and last showed new text: the DOM change (a
// MutationObserver callback, run right after the script that changed it)
// and the next animation frame after it (the frame that paints it).
// firsttoken reads the stamps back and converts them to the DevTools clock.
(() => {
  if (window.__firsttoken) return;
  const ft = { armed: null, observer: null };
  Object.defineProperty(window, "__firsttoken", { value: ft });
  const action = (e) => {
    const a = ft.armed;
    if (a && a.sending && a.input === null && e.isTrusted) a.input = e.timeStamp;
  };
  for (const type of ["keydown", "mousedown", "pointerdown"]) {
    addEventListener(type, action, true);
  }
  const check = () => {
    const a = ft.armed;
    if (!a) return;
    const now = performance.now();
    const els = document.querySelectorAll(a.sel);
    if (els.length === 0) return;
    const el = els[els.length - 1];
    const text = el.textContent || "";
    // The answer before the action, still the last match (a page that
    // re-renders its messages may replace its element): not new. Once the
    // last match was empty or another element was added, any text is new.
    if (els.length !== a.count || text.trim() === "") a.before = null;
    if (text === a.before) return;
    if (text.trim() === "" || text === a.last_text) return;
    a.changes += 1;
    a.last_dom = now;
    a.last_text = text;
    if (a.first_dom === null) {
      a.first_dom = now;
      a.first_text = text;
    }
    const change = a.changes;
    requestAnimationFrame(() => {
      const t = performance.now();
      if (change === 1) a.first_paint = t;
      if (a.changes === change) a.last_paint = t;
    });
  };
  // Arm for one message: remember what the answer selector matches now,
  // so only a new element or new text counts.
  ft.arm = (sel) => {
    const els = document.querySelectorAll(sel);
    const el = els.length ? els[els.length - 1] : null;
    ft.armed = {
      sel, count: els.length, before: el ? el.textContent : null,
      sending: false, input: null, changes: 0,
      first_dom: null, first_paint: null, first_text: null,
      last_dom: null, last_paint: null, last_text: null,
    };
    if (!ft.observer) {
      ft.observer = new MutationObserver(check);
      ft.observer.observe(document.documentElement,
        { subtree: true, childList: true, characterData: true });
    }
    return true;
  };
  ft.sending = () => { if (ft.armed) ft.armed.sending = true; return true; };
  // The stamps so far, the page's clock now, and the resource-timing
  // entries of `url` (for the clock conversion), as one JSON-able object.
  ft.read = (url) => {
    const a = ft.armed || {};
    // Every entry of that URL: a page may fetch the same URL again (a
    // stream per queued job), and the message's is the one whose start
    // matches its request's (chosen by firsttoken).
    let rt = [];
    if (url) {
      rt = performance.getEntriesByName(url, "resource").map((e) => (
        { request_start: e.requestStart, start: e.startTime }));
    }
    return {
      now: performance.now(), time_origin: performance.timeOrigin,
      input: a.input ?? null, changes: a.changes ?? 0,
      first_dom: a.first_dom ?? null, first_paint: a.first_paint ?? null,
      first_text: a.first_text ?? null,
      last_dom: a.last_dom ?? null, last_paint: a.last_paint ?? null,
      last_text: a.last_text ?? null, rt,
    };
  };
})();
