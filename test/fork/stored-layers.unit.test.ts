import * as fc from 'fast-check';
import { scanLayers, storedLayers } from '../../src/fork/fork-plan';

describe("storedLayers: a stored DAG's layers without parsing its steps", () => {
  const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,8}$/);
  it('gives the count, sizes and each layer of the DAG the store wrote', () => {
    fc.assert(
      fc.property(fc.array(fc.array(id, { maxLength: 5 }), { maxLength: 8 }), (layers) => {
        // as the store writes it: steps first, then layers (a task may hold anything, "layers": too)
        const text = JSON.stringify({ steps: [{ stepId: 'x', task: '"layers":[[]] \\ ]' }], layers });
        const got = storedLayers(text);
        expect({ count: got.count, sizes: got.sizes, all: got.all() }).toEqual({
          count: layers.length,
          sizes: layers.map((l) => l.length),
          all: layers,
        });
        layers.forEach((layer, n) => expect(got.at(n)).toEqual(layer));
        expect(got.at(layers.length)).toEqual([]);
        // the layers column holds the array alone
        const column = scanLayers(JSON.stringify(layers));
        expect({ sizes: column.sizes, all: column.all() }).toEqual({ sizes: got.sizes, all: layers });
      }),
    );
  });
  it('reads a DAG of another form whole', () => {
    expect(storedLayers('{"layers":[["a"],["b","c"]],"steps":[]}').sizes).toEqual([1, 2]);
  });
});
