/** A sleep that `wake()` cuts short; a wake that arrives while awake is remembered for the next sleep. */
export interface WakeableSleep {
  sleep(ms: number): Promise<void>;
  wake(): void;
}

export function createWakeableSleep(): WakeableSleep {
  let pending = false;
  let resolveCurrent: (() => void) | null = null;
  return {
    sleep(ms) {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          resolveCurrent = null;
          resolve();
        }
        resolveCurrent = done;
      });
    },
    wake() {
      if (resolveCurrent) resolveCurrent();
      else pending = true;
    },
  };
}
