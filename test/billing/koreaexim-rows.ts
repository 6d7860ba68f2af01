/**
 * Rows in the exact shape Korea Eximbank's `exchangeJSON?data=AP01` returns: every field a string with
 * thousands separators, `result` a number, 23 currencies with USD last. The values are illustrative (one
 * business day's order of magnitude), not a recording of a particular day.
 */
export interface KoreaeximRow {
  result: number;
  cur_unit: string | null;
  ttb: string | null;
  tts: string | null;
  deal_bas_r: string | null;
  bkpr: string | null;
  yy_efee_r: string | null;
  ten_dd_efee_r: string | null;
  kftc_bkpr: string | null;
  kftc_deal_bas_r: string | null;
  cur_nm: string | null;
}

type Quote = [unit: string, name: string, ttb: string, tts: string, dealBaseRate: string, bookPrice: string];

const otherCurrencies: readonly Quote[] = [
  ["AED", "아랍에미리트 디르함", "399.84", "407.91", "403.88", "403"],
  ["AUD", "호주 달러", "962.56", "982.01", "972.29", "972"],
  ["BHD", "바레인 디나르", "3,895.3", "3,973.99", "3,934.65", "3,934"],
  ["BND", "브루나이 달러", "1,141.11", "1,164.16", "1,152.64", "1,152"],
  ["CAD", "캐나다 달러", "1,061.72", "1,083.17", "1,072.45", "1,072"],
  ["CHF", "스위스 프랑", "1,837.6", "1,874.73", "1,856.17", "1,856"],
  ["CNH", "위안화", "205.63", "209.78", "207.71", "207"],
  ["DKK", "덴마아크 크로네", "228.72", "233.35", "231.04", "231"],
  ["EUR", "유로", "1,706.6", "1,741.07", "1,723.84", "1,723"],
  ["GBP", "영국 파운드", "1,971.43", "2,011.26", "1,991.35", "1,991"],
  ["HKD", "홍콩 달러", "188.54", "192.35", "190.45", "190"],
  ["IDR(100)", "인도네시아 루피아", "8.84", "9.01", "8.93", "8"],
  ["JPY(100)", "일본 옌", "951.78", "971.01", "961.4", "961"],
  ["KRW", "한국 원", "0", "0", "1", "1"],
  ["KWD", "쿠웨이트 디나르", "4,790.24", "4,887.01", "4,838.63", "4,838"],
  ["MYR", "말레이지아 링기트", "346.85", "353.86", "350.36", "350"],
  ["NOK", "노르웨이 크로네", "142.67", "145.56", "144.12", "144"],
  ["NZD", "뉴질랜드 달러", "848.1", "865.23", "856.67", "856"],
  ["SAR", "사우디 리얄", "391.59", "399.5", "395.55", "395"],
  ["SEK", "스웨덴 크로나", "157.2", "160.37", "158.79", "158"],
  ["SGD", "싱가포르 달러", "1,141.11", "1,164.16", "1,152.64", "1,152"],
  ["THB", "태국 바트", "45.46", "46.37", "45.92", "45"],
];

function rowOf([unit, name, ttb, tts, dealBaseRate, bookPrice]: Quote): KoreaeximRow {
  return {
    result: 1,
    cur_unit: unit,
    ttb,
    tts,
    deal_bas_r: dealBaseRate,
    bkpr: bookPrice,
    yy_efee_r: "0",
    ten_dd_efee_r: "0",
    kftc_bkpr: bookPrice,
    kftc_deal_bas_r: dealBaseRate,
    cur_nm: name,
  };
}

/** A full business-day answer whose USD `deal_bas_r` is `usdDealBaseRate`, as the bank writes it. */
export function businessDayRows(usdDealBaseRate: string): KoreaeximRow[] {
  const usdBookPrice = usdDealBaseRate.split(".")[0] ?? usdDealBaseRate;
  return [
    ...otherCurrencies.map(rowOf),
    rowOf(["USD", "미국 달러", "1,468.56", "1,498.23", usdDealBaseRate, usdBookPrice]),
  ];
}

/** The bank's refusal: a single row in which only `result` is set. */
export function refusalRows(resultCode: number): KoreaeximRow[] {
  return [
    {
      result: resultCode,
      cur_unit: null,
      ttb: null,
      tts: null,
      deal_bas_r: null,
      bkpr: null,
      yy_efee_r: null,
      ten_dd_efee_r: null,
      kftc_bkpr: null,
      kftc_deal_bas_r: null,
      cur_nm: null,
    },
  ];
}
