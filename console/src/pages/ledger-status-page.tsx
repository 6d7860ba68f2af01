import { useMutation, useQuery } from "@tanstack/react-query";
import { Card, ErrorMessage } from "../components/ui";
import { adminApi, type LedgerStatusView, type LedgerVerification } from "../lib/api";
import { formatCount, formatSeoulDateTime } from "../lib/format";
import { type MessageKey, useI18n } from "../lib/i18n";

/**
 * Ledger integrity for admins: the latest signed checkpoint with its own checks (cheap, on every view) and
 * the full verification of every hash chain, run only when the admin asks (its cost grows with the log).
 */
export function LedgerStatusPage() {
  const { t } = useI18n();
  const status = useQuery({ queryKey: ["admin", "ledger-status"], queryFn: adminApi.ledgerStatus });
  const verify = useMutation({ mutationFn: adminApi.verifyLedger });
  return (
    <>
      <h1>{t("navLedger")}</h1>
      <Card title={t("latestCheckpoint")}>
        <ErrorMessage error={status.error} />
        {status.data && <CheckpointStatus status={status.data} />}
      </Card>
      <Card title={t("fullVerification")}>
        <p className="muted">{t("fullVerificationHelp")}</p>
        <button type="button" className="primary" onClick={() => verify.mutate()} disabled={verify.isPending}>
          {verify.isPending ? t("verifying") : t("verifyNow")}
        </button>
        <ErrorMessage error={verify.error} />
        {verify.data && <VerificationResult verification={verify.data} />}
      </Card>
    </>
  );
}

function CheckpointStatus({ status }: { status: LedgerStatusView }) {
  const { t, language } = useI18n();
  const unsealed = `${status.unsealedEventCountIsLowerBound ? "≥ " : ""}${formatCount(status.unsealedEventCount)}`;
  if (status.latest === null) {
    return (
      <>
        <p data-testid="no-checkpoint">{t("noCheckpoint")}</p>
        <p>
          {t("unsealedEvents")}: {unsealed}
        </p>
      </>
    );
  }
  const { checkpoint } = status.latest;
  const check = (passed: boolean | null, key: MessageKey) => (
    <tr>
      <th scope="row">{t(key)}</th>
      <td data-testid={`check-${key}`} className={passed === false ? "danger-text" : undefined}>
        {passed === null ? t("notChecked") : passed ? `✓ ${t("yes")}` : `✗ ${t("no")}`}
      </td>
    </tr>
  );
  return (
    <div className="table-scroll">
      <table data-testid="checkpoint-table">
        <tbody>
          <tr>
            <th scope="row">{t("checkpointSequence")}</th>
            <td>#{checkpoint.sequence}</td>
          </tr>
          <tr>
            <th scope="row">{t("sealedAt")}</th>
            <td>{formatSeoulDateTime(checkpoint.sealedAt, language)}</td>
          </tr>
          <tr>
            <th scope="row">{t("sealedEvents")}</th>
            <td>{formatCount(checkpoint.eventCount)}</td>
          </tr>
          <tr>
            <th scope="row">{t("checkpointHash")}</th>
            <td>
              <code>{checkpoint.checkpointHash}</code>
            </td>
          </tr>
          {check(status.latest.hashMatches, "hashMatches")}
          {check(status.latest.signatureValid, "signatureValid")}
          {check(status.latest.chainsToPrevious, "chainsToPrevious")}
          <tr>
            <th scope="row">{t("unsealedEvents")}</th>
            <td>{unsealed}</td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

function VerificationResult({ verification }: { verification: LedgerVerification }) {
  const { t } = useI18n();
  switch (verification.outcome) {
    case "verified": {
      const { report } = verification;
      const counts = t("verifiedCounts")
        .replace("{events}", formatCount(report.eventCount))
        .replace("{streams}", formatCount(report.streamCount))
        .replace("{checkpoints}", formatCount(report.checkpointCount));
      return (
        <div role="status" data-testid="verification-result">
          {report.problems.length === 0 ? (
            <p>✓ {t("ledgerIntact")}</p>
          ) : (
            <>
              <p className="danger-text">✗ {t("ledgerBroken")}</p>
              <ul>
                {report.problems.map((problem) => (
                  <li key={problem}>{problem}</li>
                ))}
              </ul>
              {report.problemCount > report.problems.length && (
                <p>
                  {t("ledgerBrokenFirstShown")
                    .replace("{count}", formatCount(report.problemCount))
                    .replace("{shown}", formatCount(report.problems.length))}
                </p>
              )}
            </>
          )}
          <p className="muted">
            {counts}
            {report.signaturesChecked ? "" : ` · ${t("signatureValid")}: ${t("notChecked")}`}
          </p>
        </div>
      );
    }
    case "too-large":
      return (
        <p role="status" data-testid="verification-result">
          {t("ledgerTooLarge")} {formatCount(verification.eventsMax)} — <code>{verification.command}</code>
        </p>
      );
    case "unsupported":
      return (
        <p role="status" data-testid="verification-result">
          {t("ledgerUnsupported")}
        </p>
      );
    default: {
      const unreachable: never = verification;
      throw new Error(`unhandled verification ${JSON.stringify(unreachable)}`);
    }
  }
}
