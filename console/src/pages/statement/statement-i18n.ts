import type { Language } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/**
 * The statement page's words, Korean and English, kept beside the page: a statement is a document finance
 * files, so its wording is reviewed as one piece. The type makes a missing translation a compile error.
 */

const en = {
  title: "Monthly statement",
  account: "Account",
  accountId: "Account id",
  month: "Month",
  personal: "Personal",
  organization: "Organization",
  show: "Show",
  print: "Print / save as PDF",
  downloadCsv: "Download CSV",
  provisional: "Provisional: this month may still change",
  final: "Final",
  period: "Period (Asia/Seoul)",
  summary: "Summary",
  openingBalance: "Opening balance",
  topUps: "Top-ups",
  charges: "Charges",
  corrections: "Corrections",
  closingBalance: "Closing balance",
  identity: "Closing = opening + top-ups − charges − corrections (checked to the micro-won)",
  topUpLines: "Top-ups",
  date: "Date",
  reference: "Reference",
  amount: "Amount",
  byModel: "Charges by model",
  byKey: "Charges by key",
  model: "Model",
  key: "Key",
  unnamedKey: "(no name recorded)",
  otherMembersKeys: "Other members' keys",
  requests: "Requests",
  total: "Total",
  none: "None",
  checkpoint: "Signed checkpoint",
  checkpointSequence: "Checkpoint",
  sealedAt: "Sealed at",
  checkpointHash: "Checkpoint hash",
  notSealed: "Not sealed by a signed checkpoint yet.",
  generatedAt: "Generated at",
  noOrganization: "This session belongs to no organization.",
};

export type StatementMessageKey = keyof typeof en;

const ko: Record<StatementMessageKey, string> = {
  title: "월별 명세서",
  account: "계정",
  accountId: "계정 ID",
  month: "월",
  personal: "개인",
  organization: "조직",
  show: "보기",
  print: "인쇄 / PDF로 저장",
  downloadCsv: "CSV 다운로드",
  provisional: "잠정: 이 달의 내역은 아직 바뀔 수 있습니다",
  final: "확정",
  period: "기간 (서울 시간)",
  summary: "요약",
  openingBalance: "기초 잔액",
  topUps: "충전",
  charges: "사용 요금",
  corrections: "정정",
  closingBalance: "기말 잔액",
  identity: "기말 = 기초 + 충전 − 사용 요금 − 정정 (백만분의 1원까지 확인)",
  topUpLines: "충전 내역",
  date: "일시",
  reference: "참조",
  amount: "금액",
  byModel: "모델별 사용 요금",
  byKey: "키별 사용 요금",
  model: "모델",
  key: "키",
  unnamedKey: "(이름 기록 없음)",
  otherMembersKeys: "다른 구성원의 키",
  requests: "요청 수",
  total: "합계",
  none: "없음",
  checkpoint: "서명된 체크포인트",
  checkpointSequence: "체크포인트",
  sealedAt: "봉인 시각",
  checkpointHash: "체크포인트 해시",
  notSealed: "아직 서명된 체크포인트로 봉인되지 않았습니다.",
  generatedAt: "작성 시각",
  noOrganization: "이 세션은 조직에 속하지 않습니다.",
};

export const statementMessages: Record<Language, Record<StatementMessageKey, string>> = { en, ko };

/** The statement's words in the console's language, and a lookup by key. */
export function useStatementWords() {
  const { language } = useI18n();
  const words = statementMessages[language];
  return { language, words, word: (key: StatementMessageKey) => words[key] };
}
