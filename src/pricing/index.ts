export * from './money';
export { PRICE_TABLE_VERSION } from './price-table';
export * from './step-cost';
