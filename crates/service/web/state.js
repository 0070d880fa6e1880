// What the page knows and holds open, shared by every module, and the
// refreshes any part of it may ask for. board.js plugs the refreshes in, so
// the modules that ask need not import the ones that answer (no cycles).

/// Events arrive in bursts; one refresh per burst is enough.
export const REFRESH_DELAY_MS = 100;

/// The selected mission and the streams held open.
export const state = {
  token: null,
  missionId: null,
  mission: null,
  /// Task id → key, for events that name a task by id only.
  taskKeys: new Map(),
  lastSeq: 0,
  missionStream: null,
  workspaceStream: null,
  streamStates: new Map(),
  /// The task graph's viewBox (zoom and pan) and the whole graph's.
  dagView: null,
  dagFull: null,
};

/// Set by board.js.
export const hooks = {
  /// Reloads the selected mission: header, board and graph (coalesced).
  refreshMission: () => {},
  /// Reloads the missions list (coalesced).
  refreshMissions: () => {},
  /// Reloads what waits for a person (coalesced).
  refreshApprovals: () => {},
  /// Stops the streams and asks for a token, saying why.
  needToken: () => {},
};
