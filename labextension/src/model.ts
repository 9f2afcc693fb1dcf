/**
 * The data behind one tile_lab view: `Inspection.to_json_dict()` without `cubin`,
 * plus `version: 1`, optionally with a `diagram`.
 *
 * Output data comes from notebooks we may not trust, so everything is checked here
 * once and the rest of the extension works with these typed, validated values.
 */

export const MIME_TYPE = 'application/vnd.tile-lab.v1+json';

/** Stage panes in display order (keys of `stages`), after `source`. */
export const STAGE_ORDER = ['cutile', 'tileir', 'ptx', 'sass'];

export const STAGE_TITLES: Record<string, string> = {
  source: 'Source',
  cutile: 'cuTile IR',
  tileir: 'Tile IR',
  ptx: 'PTX',
  sass: 'SASS',
  remarks: 'Remarks',
  diagram: 'Diagram'
};

export interface IStage {
  name: string;
  text: string;
  /** line_map[i]: 1-based source line of text line i, or null. */
  line_map: (number | null)[];
}

export interface IRemark {
  kind: string;
  category: string;
  message: string;
  line: number | null;
  col: number | null;
  pass_name: string;
}

/**
 * Where one source line's memory accesses land in the diagram.
 * `rects` are [x, y, width, height] in the SVG's user coordinates; they are drawn by
 * this extension on top of the (sanitised) SVG, so the Python side never has to emit
 * interactive markup.
 */
export interface IFootprint {
  line: number;
  label: string;
  rects: [number, number, number, number][];
}

export interface IDiagram {
  svg: string;
  footprints: IFootprint[];
}

export interface IInspectionData {
  version: 1;
  kernel_name: string;
  filename: string;
  first_line: number;
  source: string;
  arch: string;
  signature: string;
  stages: Record<string, IStage>;
  remarks: IRemark[];
  show: string[];
  versions: Record<string, string>;
  diagram: IDiagram | null;
}

/** Raised for data that is not a version-1 tile_lab view; the message names the field. */
export class InvalidViewData extends Error {
  constructor(field: string, problem: string) {
    super(`tile_lab view data: ${field} ${problem}`);
    this.name = 'InvalidViewData';
  }
}

type Dict = Record<string, unknown>;

function isDict(v: unknown): v is Dict {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(d: Dict, key: string, where: string, fallback?: string): string {
  const v = d[key];
  if (typeof v === 'string') {
    return v;
  }
  if (v === undefined && fallback !== undefined) {
    return fallback;
  }
  throw new InvalidViewData(`${where}${key}`, 'must be a string');
}

function lineNumber(v: unknown, where: string): number | null {
  if (v === null || v === undefined) {
    return null;
  }
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) {
    return v;
  }
  throw new InvalidViewData(where, 'must be a positive integer or null');
}

function parseStage(name: string, v: unknown): IStage {
  const where = `stages.${name}.`;
  if (!isDict(v)) {
    throw new InvalidViewData(`stages.${name}`, 'must be an object');
  }
  const text = str(v, 'text', where);
  const map = v['line_map'];
  if (!Array.isArray(map)) {
    throw new InvalidViewData(`${where}line_map`, 'must be a list');
  }
  return {
    name: str(v, 'name', where, name),
    text,
    line_map: map.map((x, i) => lineNumber(x, `${where}line_map[${i}]`))
  };
}

function parseRemark(v: unknown, i: number): IRemark {
  const where = `remarks[${i}].`;
  if (!isDict(v)) {
    throw new InvalidViewData(`remarks[${i}]`, 'must be an object');
  }
  const col = v['col'];
  return {
    kind: str(v, 'kind', where, ''),
    category: str(v, 'category', where, ''),
    message: str(v, 'message', where),
    line: lineNumber(v['line'], `${where}line`),
    col: typeof col === 'number' ? col : null,
    pass_name: str(v, 'pass_name', where, '')
  };
}

function parseRect(v: unknown, where: string): [number, number, number, number] {
  if (
    !Array.isArray(v) ||
    v.length !== 4 ||
    !v.every(x => typeof x === 'number' && Number.isFinite(x))
  ) {
    throw new InvalidViewData(where, 'must be [x, y, width, height] numbers');
  }
  return [v[0], v[1], v[2], v[3]];
}

function parseDiagram(v: unknown): IDiagram | null {
  if (v === undefined || v === null) {
    return null;
  }
  if (!isDict(v)) {
    throw new InvalidViewData('diagram', 'must be an object');
  }
  const fps = v['footprints'] ?? [];
  if (!Array.isArray(fps)) {
    throw new InvalidViewData('diagram.footprints', 'must be a list');
  }
  return {
    svg: str(v, 'svg', 'diagram.', ''),
    footprints: fps.map((f, i) => {
      const where = `diagram.footprints[${i}]`;
      if (!isDict(f)) {
        throw new InvalidViewData(where, 'must be an object');
      }
      const line = lineNumber(f['line'], `${where}.line`);
      if (line === null) {
        throw new InvalidViewData(`${where}.line`, 'is required');
      }
      const rects = f['rects'] ?? [];
      if (!Array.isArray(rects)) {
        throw new InvalidViewData(`${where}.rects`, 'must be a list');
      }
      return {
        line,
        label: str(f, 'label', `${where}.`, ''),
        rects: rects.map((r, j) => parseRect(r, `${where}.rects[${j}]`))
      };
    })
  };
}

/** Check untrusted output data and return it typed; throws InvalidViewData. */
export function parseInspection(data: unknown): IInspectionData {
  if (!isDict(data)) {
    throw new InvalidViewData('data', 'must be a JSON object');
  }
  // The agreed key is `version`; tile_lab.render.html also writes `schema_version`.
  const key = 'version' in data ? 'version' : 'schema_version';
  if (data[key] !== 1) {
    throw new InvalidViewData(
      key,
      `is ${JSON.stringify(data[key])}; this extension reads version 1`
    );
  }
  const stagesIn = data['stages'] ?? {};
  if (!isDict(stagesIn)) {
    throw new InvalidViewData('stages', 'must be an object');
  }
  const stages: Record<string, IStage> = {};
  for (const [name, v] of Object.entries(stagesIn)) {
    stages[name] = parseStage(name, v);
  }
  const remarksIn = data['remarks'] ?? [];
  if (!Array.isArray(remarksIn)) {
    throw new InvalidViewData('remarks', 'must be a list');
  }
  const showIn = data['show'] ?? ['source', 'tileir', 'sass', 'remarks'];
  if (!Array.isArray(showIn) || !showIn.every(s => typeof s === 'string')) {
    throw new InvalidViewData('show', 'must be a list of pane names');
  }
  const versionsIn = data['versions'] ?? {};
  const versions: Record<string, string> = {};
  if (isDict(versionsIn)) {
    for (const [k, v] of Object.entries(versionsIn)) {
      versions[k] = String(v);
    }
  }
  const first = data['first_line'] ?? 1;
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 1) {
    throw new InvalidViewData('first_line', 'must be a positive integer');
  }
  return {
    version: 1,
    kernel_name: str(data, 'kernel_name', '', 'kernel'),
    filename: str(data, 'filename', '', ''),
    first_line: first,
    source: str(data, 'source', ''),
    arch: str(data, 'arch', '', ''),
    signature: str(data, 'signature', '', ''),
    stages,
    remarks: remarksIn.map(parseRemark),
    show: showIn as string[],
    versions,
    diagram: parseDiagram(data['diagram'])
  };
}

/** Split text into display lines the same way Python's str.splitlines does for \n / \r\n. */
export function splitLines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const lines = text.split(/\r\n|\r|\n/);
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}
