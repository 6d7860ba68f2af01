import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useRef, useState } from "react";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi } from "../../lib/api";
import { fieldText } from "../../lib/form-fields";
import { formatWon } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { inputLengthsMax } from "../../lib/input-bounds";
import { useOneSubmissionAtATime } from "../../lib/one-submission-at-a-time";
import type { AccountRef } from "./account-details";

/** What the credits API accepts: won above zero with at most two decimals (checked here to say so inline). */
function isTopUpAmount(text: string): boolean {
  return /^\d{1,12}(\.\d{1,2})?$/.test(text) && /[1-9]/.test(text);
}

type TopUp = AccountRef & { amountWon: string; reference: string };

/** 128 random bits in hex (`getRandomValues`, unlike `randomUUID`, works on a console served over plain HTTP). */
function newIdempotencyKey(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Credits an account; the amount is checked before sending, and a success shows the new balance. Sending the
 * same top-up again after a failure (a 503, a lost answer: it may have been recorded) reuses its
 * Idempotency-Key, so the account is credited once; after a success, the same fields are a new top-up.
 */
export function TopUpCard({ onToppedUp }: { onToppedUp(account: AccountRef): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  // Read by the next submission, never rendered: a ref, so one sent at once after this one still sees it.
  const unconfirmed = useRef<{ fields: string; idempotencyKey: string }>(undefined);
  const topUp = useMutation({
    mutationFn: (input: TopUp & { idempotencyKey: string }) =>
      adminApi.topUp(input.kind, input.id, input.amountWon, input.reference, input.idempotencyKey),
    onSuccess: (_result, input) => {
      unconfirmed.current = undefined;
      onToppedUp({ kind: input.kind, id: input.id });
      void client.invalidateQueries({ queryKey: ["admin"] });
    },
  });
  const [amountError, setAmountError] = useState(false);
  const submitOnce = useOneSubmissionAtATime();

  function send(form: FormData) {
    // A new attempt: the last one's success or failure no longer describes what is on screen.
    topUp.reset();
    const input = { kind: fieldText(form, "kind"), id: fieldText(form, "id") };
    const amountWon = fieldText(form, "amountWon");
    if (!isTopUpAmount(amountWon)) {
      setAmountError(true);
      return undefined;
    }
    const entered = { ...input, amountWon, reference: fieldText(form, "reference") };
    const fields = JSON.stringify(entered);
    const idempotencyKey =
      unconfirmed.current?.fields === fields ? unconfirmed.current.idempotencyKey : newIdempotencyKey();
    unconfirmed.current = { fields, idempotencyKey };
    return topUp.mutateAsync({ ...entered, idempotencyKey });
  }

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    submitOnce(() => send(form));
  }

  return (
    <Card title={t("topUp")}>
      <form className="row wrap" onSubmit={onSubmit}>
        <TopUpFields
          amountInvalid={amountError}
          onAmountChange={() => {
            setAmountError(false);
            topUp.reset();
          }}
        />
        <button type="submit" className="primary" disabled={topUp.isPending}>
          {t("topUp")}
        </button>
      </form>
      <ErrorMessage error={topUp.error} />
      {topUp.data && (
        <p role="status" data-testid="top-up-result">
          {t("toppedUp")} {formatWon(topUp.data.balanceWon)}
        </p>
      )}
    </Card>
  );
}

function TopUpFields(props: { amountInvalid: boolean; onAmountChange(): void }) {
  const { t } = useI18n();
  return (
    <>
      <label>
        {t("kind")}
        <select name="kind" defaultValue="user">
          <option value="user">{t("personal")} (user)</option>
          <option value="organization">{t("organization")} (organization)</option>
        </select>
      </label>
      <label>
        {t("id")}
        <input name="id" required maxLength={inputLengthsMax.accountId} />
      </label>
      <TopUpAmountField invalid={props.amountInvalid} onChange={props.onAmountChange} />
      <label>
        {t("reference")}
        <input name="reference" required maxLength={inputLengthsMax.topUpReference} />
      </label>
    </>
  );
}

/** The amount says inline what is wrong with it, until it is changed. */
function TopUpAmountField(props: { invalid: boolean; onChange(): void }) {
  const { t } = useI18n();
  return (
    <label>
      {t("amountWon")}
      <input
        name="amountWon"
        inputMode="decimal"
        aria-invalid={props.invalid}
        aria-describedby={props.invalid ? "top-up-amount-error" : undefined}
        onChange={props.onChange}
      />
      {props.invalid && (
        <span id="top-up-amount-error" className="field-error" role="alert">
          {t("invalidTopUpAmount")}
        </span>
      )}
    </label>
  );
}
