<?php

function handle_audit(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $values = [];
    $values['keyA-1'] = 'a_Value';
    $values['keyB-2'] = $param;
    $values['keyC'] = 'another_Value';
    $bar = $values['keyB-2'];
    $sql = "SELECT * FROM users WHERE name = '" . $bar . "'";
    $rows = $db->query($sql);
}
