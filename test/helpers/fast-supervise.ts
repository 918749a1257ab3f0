// The supervisor settings of the supervise e2e files: a round every 2 s, lost after two failed rounds, and healthy
// rounds reported every 10 s (five a watch), so a figure's windows and a test's waits see reports within seconds.
export const fastSupervise = {
  interval: '2s',
  reportEvery: '10s',
  failureThreshold: 2,
  backoff: '1s',
  maxRelaunches: 3,
  window: '1h',
};
