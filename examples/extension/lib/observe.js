// Observation of the tabs a controlled tab opens during native input: the
// timing half of observed popups, free of Chrome so that it runs under a
// test clock. lib/ownership.js decides which candidates are granted.
//
// Only native click and key input arms a Watch, right before the input is
// dispatched. Each input phase opens PHASE_MS of observation; a navigation
// target event qualifies only while an interval is open, only from the
// main frame (frameId 0) of the watched source tab. Events never extend
// the interval. The operation's result waits for the rest of the last
// interval, then the candidates get BUDGET_MS to be processed: together at
// most PHASE_MS + BUDGET_MS of delay. Expiry or cancellation invalidates
// every later continuation (Budget.valid).

/** Observation opened by one input phase, in ms. */
export const PHASE_MS = 100;
/** Budget of candidate processing after the last interval, in ms. */
export const BUDGET_MS = 500;

/**
 * The timer clock: after(ms) → {promise, cancel}, the promise resolving
 * once ms passed. A manual clock resolves them only when told.
 */
export const realClock = {
  after(ms) {
    let t;
    const promise = new Promise((resolve) => { t = setTimeout(resolve, ms); });
    return { promise, cancel: () => clearTimeout(t) };
  },
};

/** A clock whose timers fire only at expire(); for tests. */
export class ManualClock {
  constructor() { this.pending = new Set(); }
  after() {
    let entry;
    const promise = new Promise((resolve) => { entry = resolve; this.pending.add(entry); });
    return { promise, cancel: () => this.pending.delete(entry) };
  }
  /** Fires every pending timer; returns how many. */
  expire() {
    const fire = [...this.pending];
    this.pending.clear();
    fire.forEach((f) => f());
    return fire.length;
  }
}

/**
 * One observed operation on source tab sourceTabId. arm() before each
 * input phase; offer() every navigation target event; settle() once the
 * input was dispatched; cancel() on abort.
 */
export class Watch {
  constructor(sourceTabId, clock = realClock) {
    this.source = sourceTabId;
    this.clock = clock;
    this.open = false;
    this.closed = false;
    this.cancelled = false;
    this.timers = [];
    this.latest = null;
    this.candidates = [];
    this.aborted = new Promise((resolve) => { this.abort = resolve; });
  }

  /** Opens PHASE_MS of observation for one input phase. */
  arm() {
    if (this.closed) return;
    const timer = this.clock.after(PHASE_MS);
    this.timers.push(timer);
    this.latest = timer;
    this.open = true;
    timer.promise.then(() => { if (this.latest === timer) this.open = false; });
  }

  /**
   * Offers one navigation target event {sourceTabId, sourceFrameId,
   * tabId}; returns whether it became a candidate.
   */
  offer(ev) {
    if (!this.open || this.closed || !ev || ev.sourceTabId !== this.source || ev.sourceFrameId !== 0) return false;
    if (!this.candidates.includes(ev.tabId)) this.candidates.push(ev.tabId);
    return true;
  }

  /** Resolves with the candidates once the last interval ended ([] when cancelled). */
  async settle() {
    while (!this.closed && this.latest) {
      const l = this.latest;
      await Promise.race([l.promise, this.aborted]);
      if (this.latest === l) break; // no newer phase armed meanwhile
    }
    this.open = false;
    this.closed = true;
    return this.cancelled ? [] : this.candidates.slice();
  }

  /** Closes the watch at once; its candidates are dropped. */
  cancel() {
    this.cancelled = true;
    this.closed = true;
    this.open = false;
    this.timers.forEach((t) => t.cancel());
    this.candidates = [];
    this.abort();
  }
}

/**
 * Runs fn(budget) under BUDGET_MS: budget.valid turns false when the
 * budget expires, and the result is then whatever fn had committed.
 * Resolves when fn finished or the budget expired, whichever is first.
 */
export async function withinBudget(fn, clock = realClock) {
  const budget = { valid: true };
  const timer = clock.after(BUDGET_MS);
  try {
    await Promise.race([
      Promise.resolve().then(() => fn(budget)).catch(() => {}),
      timer.promise,
    ]);
  } finally {
    budget.valid = false;
    timer.cancel();
  }
}

/** Whether a CDP input command is a native click or key phase that arms a Watch. */
export function armsObservation(method, params) {
  const type = params && params.type;
  if (method === 'Input.dispatchMouseEvent') return type === 'mousePressed' || type === 'mouseReleased';
  if (method === 'Input.dispatchKeyEvent') return type === 'keyDown' || type === 'rawKeyDown' || type === 'keyUp' || type === 'char';
  return false;
}
